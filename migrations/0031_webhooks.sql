-- Webhook triggers: a signed endpoint per hook (POST /hooks/{id} on the gateway) that turns a
-- third party's event into a turn of the hook's agent, or fires one of its cron jobs now.
CREATE TABLE webhooks (
    id                    uuid PRIMARY KEY,
    tenant_id             uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    agent_id              uuid NOT NULL,
    name                  text NOT NULL,
    -- the HMAC key, sealed with secrets.master_key (the row id in the context)
    secret                bytea NOT NULL,
    -- event types accepted (X-GitHub-Event, X-GitLab-Event, payload.event_type/type); empty: all
    events                text[] NOT NULL DEFAULT '{}',
    -- the prompt, with {dotted.path} placeholders filled from the payload; empty: the payload itself
    prompt                text NOT NULL DEFAULT '',
    skills                text[] NOT NULL DEFAULT '{}',
    -- where the answer goes, as a cron job's `deliver` (local, platform[:chat[:thread]], comma lists)
    deliver               text NOT NULL DEFAULT 'local',
    -- fire this cron job now (the payload as the run's context) instead of a turn of its own
    cron_job_id           uuid,
    enabled               boolean NOT NULL DEFAULT true,
    rate_limit_per_minute integer NOT NULL DEFAULT 30 CHECK (rate_limit_per_minute > 0),
    last_received_at      timestamptz,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX webhooks_name ON webhooks (tenant_id, agent_id, lower(name));

-- Deliveries seen, so a sender's retry of the same delivery id starts nothing twice.
CREATE TABLE webhook_deliveries (
    webhook_id   uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    delivery_id  text NOT NULL,
    event        text NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (webhook_id, delivery_id)
);

-- Requests to run a cron job now with extra context (from a webhook); the scheduler claims
-- them with the due jobs, so a fired run obeys the same exactly-once ledger.
CREATE TABLE cron_fires (
    id          uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL,
    job_id      uuid NOT NULL,
    context     text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, job_id) REFERENCES cron_jobs (tenant_id, id) ON DELETE CASCADE
);
ALTER TABLE cron_runs ADD COLUMN context text;
