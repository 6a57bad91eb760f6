-- A chat turn that stops to ask (a dangerous command's approval, a clarifying question) puts
-- the question in the outbox in the same transaction that parks it, so the person in the chat
-- sees it (with buttons where the platform has them) exactly once.
CREATE FUNCTION interaction_to_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    destination jsonb;
BEGIN
    SELECT reply_to INTO destination FROM turns WHERE tenant_id = NEW.tenant_id AND id = NEW.turn_id;
    IF destination IS NOT NULL THEN
        INSERT INTO outbox (id, tenant_id, turn_id, channel_id, destination, dedupe_key, payload)
        VALUES (gen_random_uuid(), NEW.tenant_id, NEW.turn_id, (destination ->> 'channel_id')::uuid, destination,
                'interaction:' || NEW.id,
                jsonb_build_object('kind', 'interaction', 'interaction',
                    jsonb_build_object('id', NEW.id, 'kind', NEW.kind, 'prompt', NEW.prompt,
                                       'expires_at', NEW.expires_at)))
        ON CONFLICT (tenant_id, dedupe_key) DO NOTHING;
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER interactions_to_outbox
    AFTER INSERT ON interactions
    FOR EACH ROW EXECUTE FUNCTION interaction_to_outbox();
