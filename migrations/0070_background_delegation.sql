-- Background delegation (issue 41): `delegate_task(background=true)` hands its tasks to
-- children that run as queued turns of their own, each in a child session, on any worker.
-- When the last child ends, one turn carrying every summary is queued on the parent session
-- (its answer goes to the parent's chat). `/stop` cancels a session's running children.
-- Written to apply again over itself.
CREATE TABLE IF NOT EXISTS delegations (
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id                uuid NOT NULL,
    agent_id          uuid NOT NULL,
    parent_session_id uuid NOT NULL,
    -- the turn and tool call that delegated: a resumed turn running the call again finds it
    parent_turn_id    uuid NOT NULL,
    call_id           text NOT NULL,
    -- where the parent's turn answered (hermes_core::outbox::Destination), for the report
    reply_to          jsonb,
    max_iterations    integer NOT NULL CHECK (max_iterations BETWEEN 1 AND 50),
    -- the tools and toolsets the parent's turn had: a child gets none the parent lacked (a chat's
    -- narrower set stays narrow)
    tools             text[] NOT NULL DEFAULT '{}',
    toolsets          text[] NOT NULL DEFAULT '{}',
    state             text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'reported', 'cancelled')),
    report_turn_id    uuid,
    created_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, parent_turn_id, call_id),
    FOREIGN KEY (tenant_id, parent_session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS delegations_running ON delegations (tenant_id, parent_session_id)
    WHERE state = 'running';

CREATE TABLE IF NOT EXISTS delegation_tasks (
    tenant_id     uuid NOT NULL,
    delegation_id uuid NOT NULL,
    position      integer NOT NULL CHECK (position >= 1),
    goal          text NOT NULL,
    role          text NOT NULL CHECK (role IN ('leaf', 'orchestrator')),
    session_id    uuid NOT NULL,
    turn_id       uuid NOT NULL,
    state         text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'completed', 'failed', 'cancelled')),
    summary       text,
    finished_at   timestamptz,
    PRIMARY KEY (tenant_id, delegation_id, position),
    UNIQUE (tenant_id, turn_id),
    FOREIGN KEY (tenant_id, delegation_id) REFERENCES delegations (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS delegation_tasks_running ON delegation_tasks (tenant_id) WHERE state = 'running';

ALTER TABLE delegations ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_rows ON delegations;
CREATE POLICY tenant_rows ON delegations TO hermes_tenant
    USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant());
DROP POLICY IF EXISTS system_paths ON delegations;
CREATE POLICY system_paths ON delegations TO hermes_system USING (true) WITH CHECK (true);

ALTER TABLE delegation_tasks ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_rows ON delegation_tasks;
CREATE POLICY tenant_rows ON delegation_tasks TO hermes_tenant
    USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant());
DROP POLICY IF EXISTS system_paths ON delegation_tasks;
CREATE POLICY system_paths ON delegation_tasks TO hermes_system USING (true) WITH CHECK (true);

-- A child's turn cancelled before it ran, some other way than `/stop` (which cancels its
-- delegation first), ends its task in the same transaction, so the cap and `/agents` stop
-- counting it and the report, when the others end, says it was stopped. A running one ends
-- through the worker's `finish_turn`, which records the child's end with it.
CREATE OR REPLACE FUNCTION turns_end_cancelled_child() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE delegation_tasks SET state = 'cancelled', finished_at = now()
    WHERE tenant_id = NEW.tenant_id AND turn_id = NEW.id AND state = 'running';
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS turns_cancelled_child ON turns;
CREATE TRIGGER turns_cancelled_child AFTER UPDATE OF status ON turns FOR EACH ROW
    WHEN (NEW.status = 'cancelled' AND OLD.status IN ('queued', 'waiting'))
    EXECUTE FUNCTION turns_end_cancelled_child();
