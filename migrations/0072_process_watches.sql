-- Processes that wake the agent (issue 41): `terminal(background=true, notify_on_complete,
-- watch_patterns)` records a watch; workers poll watched processes in their sandboxes and, when
-- one ends or prints a watched pattern, queue a turn on its session (answered in its chat) in
-- the transaction that records the notice, so none is lost or doubled whichever worker polls.
-- Written to apply again over itself.
CREATE TABLE IF NOT EXISTS process_watches (
    tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id                 uuid NOT NULL,
    agent_id           uuid NOT NULL,
    session_id         uuid NOT NULL,
    -- the sandbox's workspace: hermes_core::Workspace::Own(n) as n's bits, NULL for the shared one
    workspace          bigint,
    process_id         text NOT NULL,
    command            text NOT NULL,
    -- plain texts; a line holding one wakes the agent (at most one notice per 15 s)
    patterns           text[] NOT NULL DEFAULT '{}' CHECK (cardinality(patterns) <= 5),
    notify_on_complete boolean NOT NULL,
    reply_to           jsonb,
    -- the starting turn's API key: its notices run with that key's limits and usage
    api_key_id         uuid,
    -- the turns its notices queued: a notice's own turn may not start another watch (no chains)
    notice_turns       uuid[] NOT NULL DEFAULT '{}',
    output_offset      bigint NOT NULL DEFAULT 0,
    notices            integer NOT NULL DEFAULT 0,
    last_notice_at     timestamptz,
    state              text NOT NULL DEFAULT 'watching' CHECK (state IN ('watching', 'done')),
    next_check_at      timestamptz NOT NULL DEFAULT now(),
    claimed_by         text,
    claimed_until      timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, session_id, process_id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS process_watches_due ON process_watches (next_check_at) WHERE state = 'watching';

ALTER TABLE process_watches ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_rows ON process_watches;
CREATE POLICY tenant_rows ON process_watches TO hermes_tenant
    USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant());
DROP POLICY IF EXISTS system_paths ON process_watches;
CREATE POLICY system_paths ON process_watches TO hermes_system USING (true) WITH CHECK (true);
