-- Cron: jobs per tenant and agent, and a ledger of their runs. Scheduler replicas claim due
-- jobs with FOR UPDATE SKIP LOCKED and move next_run_at on in the same transaction, so each
-- slot is claimed once; the run's ledger row goes claimed -> running -> completed | failed,
-- or unknown when what ran it vanished (never re-run blindly, as upstream).
CREATE TABLE cron_jobs (
    id                  uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL,
    agent_id            uuid NOT NULL,
    name                text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    prompt              text NOT NULL,
    skills              text[] NOT NULL DEFAULT '{}',
    -- another model for this job's runs (the agent's provider)
    model               text,
    -- hermes_schedule::Schedule::spec: reading it again gives the same schedule
    schedule            text NOT NULL,
    schedule_kind       text NOT NULL CHECK (schedule_kind IN ('interval', 'cron', 'once')),
    schedule_display    text NOT NULL,
    timezone            text NOT NULL DEFAULT 'UTC',
    -- runs to make (NULL: forever) and made
    repeat_times        integer CHECK (repeat_times IS NULL OR repeat_times > 0),
    repeat_completed    integer NOT NULL DEFAULT 0,
    state               text NOT NULL DEFAULT 'scheduled'
                        CHECK (state IN ('scheduled', 'paused', 'completed', 'error')),
    paused_reason       text,
    next_run_at         timestamptz,
    last_run_at         timestamptz,
    last_status         text,
    last_error          text,
    last_delivery_error text,
    -- where the answer goes: local, origin, or platform[:chat[:thread]] (comma list)
    deliver             text NOT NULL DEFAULT 'local',
    -- the chat the job was created from ({platform, channel_id, chat_id, thread}), if any
    origin              jsonb,
    toolsets            text[],
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX cron_jobs_name ON cron_jobs (tenant_id, agent_id, lower(name));
CREATE INDEX cron_jobs_due ON cron_jobs (next_run_at) WHERE state = 'scheduled';

CREATE TABLE cron_runs (
    id            uuid PRIMARY KEY,
    tenant_id     uuid NOT NULL,
    job_id        uuid NOT NULL,
    scheduled_for timestamptz NOT NULL,
    status        text NOT NULL DEFAULT 'claimed'
                  CHECK (status IN ('claimed', 'running', 'completed', 'failed', 'unknown')),
    turn_id       uuid,
    session_id    uuid,
    output        text,
    error         text,
    claimed_by    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    UNIQUE (job_id, scheduled_for),
    FOREIGN KEY (tenant_id, job_id) REFERENCES cron_jobs (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX cron_runs_open ON cron_runs (status, created_at) WHERE status IN ('claimed', 'running');
