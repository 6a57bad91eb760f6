-- More outbound events (issue 41), written by triggers in the transaction of the change they
-- report, as 0033's are: a tool call finished, a session started or ended, a background child
-- finished, an approval was answered (or expired), a turn failed. Payloads: docs/API.md.
-- Written to apply again over itself.

-- A tool's result is stored by the turn that ran it: its call finished. Results a client sent
-- as history, a fork's copies (no turn) and a compaction's (`hermes.copying`) are not calls
-- that finished here and now.
CREATE OR REPLACE FUNCTION messages_emit_tool_finished() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('hermes.copying', true) IS DISTINCT FROM 'on'
       AND EXISTS (SELECT 1 FROM event_hooks WHERE tenant_id = NEW.tenant_id AND enabled) THEN
        PERFORM emit_event(NEW.tenant_id, 'tool.finished', jsonb_build_object(
            'session_id', NEW.session_id, 'turn_id', NEW.turn_id, 'call_id', NEW.tool_call_id,
            'tool', NEW.name, 'output', left(NEW.content #>> '{}', 2000), 'finished_at', NEW.created_at));
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS messages_tool_finished ON messages;
CREATE TRIGGER messages_tool_finished AFTER INSERT ON messages FOR EACH ROW
    WHEN (NEW.role = 'tool' AND NEW.turn_id IS NOT NULL) EXECUTE FUNCTION messages_emit_tool_finished();

CREATE OR REPLACE FUNCTION sessions_emit_started() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM event_hooks WHERE tenant_id = NEW.tenant_id AND enabled) THEN
        PERFORM emit_event(NEW.tenant_id, 'session.started', jsonb_build_object(
            'session_id', NEW.id, 'agent_id', NEW.agent_id, 'source', NEW.source, 'title', NEW.title,
            'parent_session_id', NEW.parent_session_id, 'lineage', NEW.lineage, 'started_at', NEW.created_at));
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS sessions_started ON sessions;
CREATE TRIGGER sessions_started AFTER INSERT ON sessions FOR EACH ROW EXECUTE FUNCTION sessions_emit_started();

-- A session ends when it is deleted, or when its chat moves on: `/new` drops the chat's route
-- (`new`), a reset or `/resume` points it at another session (`replaced`). A compaction is the
-- same conversation going on in its child: not an end.
CREATE OR REPLACE FUNCTION emit_session_ended(p_tenant uuid, p_session uuid, p_reason text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    payload jsonb;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM event_hooks WHERE tenant_id = p_tenant AND enabled) THEN
        RETURN;
    END IF;
    SELECT jsonb_build_object('session_id', s.id, 'agent_id', s.agent_id, 'source', s.source, 'title', s.title,
                              'reason', p_reason, 'ended_at', now())
      INTO payload FROM sessions s WHERE s.tenant_id = p_tenant AND s.id = p_session;
    -- Nothing for a session already gone (a route deleted with its session, or with its agent
    -- or tenant): the session's own delete told of it, if anything.
    IF payload IS NOT NULL THEN
        PERFORM emit_event(p_tenant, 'session.ended', payload);
    END IF;
END $$;

CREATE OR REPLACE FUNCTION session_routes_emit_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM emit_session_ended(OLD.tenant_id, OLD.session_id, 'new');
    ELSIF NOT EXISTS (SELECT 1 FROM sessions c WHERE c.tenant_id = NEW.tenant_id AND c.id = NEW.session_id
                        AND c.parent_session_id = OLD.session_id AND c.lineage = 'compaction') THEN
        PERFORM emit_session_ended(OLD.tenant_id, OLD.session_id, 'replaced');
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS session_routes_ended ON session_routes;
CREATE TRIGGER session_routes_ended AFTER DELETE ON session_routes FOR EACH ROW
    EXECUTE FUNCTION session_routes_emit_ended();
DROP TRIGGER IF EXISTS session_routes_moved ON session_routes;
CREATE TRIGGER session_routes_moved AFTER UPDATE OF session_id ON session_routes FOR EACH ROW
    WHEN (OLD.session_id IS DISTINCT FROM NEW.session_id) EXECUTE FUNCTION session_routes_emit_ended();

-- Before the delete, while the row can still be read (a route deleted with it says nothing more:
-- its trigger finds the session gone).
CREATE OR REPLACE FUNCTION sessions_emit_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- Nothing while the tenant itself is being deleted (its endpoints go with it).
    IF EXISTS (SELECT 1 FROM tenants WHERE id = OLD.tenant_id) THEN
        PERFORM emit_session_ended(OLD.tenant_id, OLD.id, 'deleted');
    END IF;
    RETURN OLD;
END $$;
DROP TRIGGER IF EXISTS sessions_deleted ON sessions;
CREATE TRIGGER sessions_deleted BEFORE DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION sessions_emit_deleted();

CREATE OR REPLACE FUNCTION delegation_tasks_emit_finished() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- Built from the row itself, so the payload is never NULL (a NULL would fail the change).
    PERFORM emit_event(NEW.tenant_id, 'child.finished', jsonb_build_object(
        'delegation_id', NEW.delegation_id, 'position', NEW.position, 'goal', left(NEW.goal, 500),
        'state', NEW.state, 'summary', left(NEW.summary, 4000), 'session_id', NEW.session_id,
        'turn_id', NEW.turn_id, 'finished_at', NEW.finished_at,
        'parent_session_id', (SELECT parent_session_id FROM delegations
                              WHERE tenant_id = NEW.tenant_id AND id = NEW.delegation_id),
        'agent_id', (SELECT agent_id FROM delegations WHERE tenant_id = NEW.tenant_id AND id = NEW.delegation_id)));
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS delegation_tasks_finished ON delegation_tasks;
CREATE TRIGGER delegation_tasks_finished AFTER UPDATE OF state ON delegation_tasks FOR EACH ROW
    WHEN (OLD.state = 'running' AND NEW.state <> 'running') EXECUTE FUNCTION delegation_tasks_emit_finished();

CREATE OR REPLACE FUNCTION interactions_emit_answered() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM emit_event(NEW.tenant_id, 'approval.answered', jsonb_build_object(
        'interaction_id', NEW.id, 'turn_id', NEW.turn_id, 'session_id', NEW.session_id, 'agent_id', NEW.agent_id,
        'status', NEW.status, 'choice', COALESCE(NEW.answer ->> 'choice', 'deny'), 'answered_at',
        COALESCE(NEW.answered_at, now())));
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS interactions_answered ON interactions;
CREATE TRIGGER interactions_answered AFTER UPDATE OF status ON interactions FOR EACH ROW
    WHEN (NEW.kind = 'approval' AND OLD.status = 'pending' AND NEW.status <> 'pending')
    EXECUTE FUNCTION interactions_emit_answered();

CREATE OR REPLACE FUNCTION turns_emit_failed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM event_hooks WHERE tenant_id = NEW.tenant_id AND enabled) THEN
        PERFORM emit_event(NEW.tenant_id, 'turn.failed', jsonb_build_object(
            'turn_id', NEW.id, 'session_id', NEW.session_id,
            'agent_id', (SELECT agent_id FROM sessions WHERE id = NEW.session_id),
            'source', (SELECT source FROM sessions WHERE id = NEW.session_id),
            'error', NEW.outcome ->> 'error', 'error_code', NEW.outcome ->> 'error_code',
            'usage', NEW.outcome -> 'usage', 'finished_at', NEW.finished_at));
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS turns_failed ON turns;
CREATE TRIGGER turns_failed AFTER UPDATE OF status ON turns FOR EACH ROW
    WHEN (NEW.status = 'failed' AND OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION turns_emit_failed();
