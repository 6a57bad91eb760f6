-- Outbound event webhooks: a tenant's endpoints told of what happens (a turn finished, a cron
-- run finished or failed, an approval is asked for). Events are written by triggers in the
-- same transaction as the change, so none is lost or invented; the gateway delivers them,
-- signed, with retries, and nothing waits for the receiver.
CREATE TABLE event_hooks (
    id               uuid PRIMARY KEY,
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    url              text NOT NULL,
    -- events sent; empty: all
    events           text[] NOT NULL DEFAULT '{}',
    -- the signing key, sealed with secrets.master_key (the row id in the context)
    secret           bytea NOT NULL,
    description      text NOT NULL DEFAULT '',
    enabled          boolean NOT NULL DEFAULT true,
    last_delivery_at timestamptz,
    -- the receiver's last HTTP status, or why there was none
    last_status      integer,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, id)
);
CREATE INDEX event_hooks_by_tenant ON event_hooks (tenant_id) WHERE enabled;

CREATE TABLE event_deliveries (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL,
    hook_id         uuid NOT NULL,
    event           text NOT NULL,
    data            jsonb NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_status     integer,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    FOREIGN KEY (tenant_id, hook_id) REFERENCES event_hooks (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX event_deliveries_due ON event_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX event_deliveries_by_hook ON event_deliveries (hook_id, created_at DESC);

-- One event for each of the tenant's enabled hooks that takes it.
CREATE FUNCTION emit_event(p_tenant uuid, p_event text, p_data jsonb) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO event_deliveries (id, tenant_id, hook_id, event, data)
    SELECT gen_random_uuid(), h.tenant_id, h.id, p_event, p_data FROM event_hooks h
    WHERE h.tenant_id = p_tenant AND h.enabled AND (cardinality(h.events) = 0 OR p_event = ANY (h.events));
$$;

CREATE FUNCTION turns_emit_finished() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM event_hooks WHERE tenant_id = NEW.tenant_id AND enabled) THEN
        PERFORM emit_event(NEW.tenant_id, 'turn.finished', jsonb_build_object(
            'turn_id', NEW.id, 'session_id', NEW.session_id,
            'agent_id', (SELECT agent_id FROM sessions WHERE id = NEW.session_id),
            'source', (SELECT source FROM sessions WHERE id = NEW.session_id),
            'status', NEW.status::text, 'finish_reason', NEW.outcome ->> 'finish_reason',
            'error', NEW.outcome ->> 'error', 'error_code', NEW.outcome ->> 'error_code',
            'usage', NEW.outcome -> 'usage', 'output', left(NEW.outcome ->> 'content', 4000),
            'finished_at', NEW.finished_at));
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER turns_finished AFTER UPDATE OF status ON turns FOR EACH ROW
    WHEN (NEW.status IN ('completed', 'failed', 'cancelled') AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION turns_emit_finished();

CREATE FUNCTION interactions_emit_approval() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM emit_event(NEW.tenant_id, 'approval.requested', jsonb_build_object(
        'interaction_id', NEW.id, 'turn_id', NEW.turn_id, 'session_id', NEW.session_id,
        'agent_id', NEW.agent_id, 'prompt', NEW.prompt, 'expires_at', NEW.expires_at));
    RETURN NULL;
END $$;
CREATE TRIGGER interactions_approval AFTER INSERT ON interactions FOR EACH ROW
    WHEN (NEW.kind = 'approval') EXECUTE FUNCTION interactions_emit_approval();

CREATE FUNCTION cron_runs_emit_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM emit_event(NEW.tenant_id,
        CASE WHEN NEW.status = 'completed' THEN 'cron.run.finished' ELSE 'cron.run.failed' END,
        jsonb_build_object(
            'run_id', NEW.id, 'job_id', NEW.job_id, 'job_name', (SELECT name FROM cron_jobs WHERE id = NEW.job_id),
            'status', NEW.status, 'error', NEW.error, 'output', left(NEW.output, 4000),
            'scheduled_for', NEW.scheduled_for, 'turn_id', NEW.turn_id, 'session_id', NEW.session_id,
            'finished_at', NEW.finished_at));
    RETURN NULL;
END $$;
CREATE TRIGGER cron_runs_ended AFTER UPDATE OF status ON cron_runs FOR EACH ROW
    WHEN (NEW.status IN ('completed', 'failed', 'unknown') AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION cron_runs_emit_ended();
