-- An endpoint deleted while an event for it is being written must not fail the change that
-- wrote it (a turn's outcome, a parked approval, a cron settle pass): the endpoints are read
-- with FOR KEY SHARE, so a concurrent delete either waits for this transaction or, if it came
-- first, leaves the endpoint out.
CREATE OR REPLACE FUNCTION emit_event(p_tenant uuid, p_event text, p_data jsonb) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO event_deliveries (id, tenant_id, hook_id, event, data)
    SELECT gen_random_uuid(), h.tenant_id, h.id, p_event, p_data FROM event_hooks h
    WHERE h.tenant_id = p_tenant AND h.enabled AND (cardinality(h.events) = 0 OR p_event = ANY (h.events))
    FOR KEY SHARE;
$$;
