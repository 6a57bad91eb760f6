-- A turn's answer and a parked turn's question reach the outbox from Rust now, in the
-- transaction that ends or parks the turn (libs/store/src/turns/outbox_rows.rs). That
-- transaction says so (`SET LOCAL hermes.outbox_by_app = 'on'`), and the triggers stand aside
-- for it. They stay for one release as the fallback of a build that does not write the rows
-- itself (an older worker still running during a rolling upgrade); a later migration drops
-- them. The bodies are 0040's, with the early return added.
CREATE OR REPLACE FUNCTION turn_reply_to_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    dest jsonb;
    n integer := 0;
    payload jsonb := jsonb_build_object('kind', 'answer', 'status', NEW.status::text, 'outcome', NEW.outcome);
BEGIN
    IF current_setting('hermes.outbox_by_app', true) = 'on' THEN
        RETURN NEW;
    END IF;
    IF hermes_tenant_channel(NEW.tenant_id, NEW.reply_to) THEN
        INSERT INTO outbox (id, tenant_id, turn_id, channel_id, destination, dedupe_key, payload)
        VALUES (gen_random_uuid(), NEW.tenant_id, NEW.id, (NEW.reply_to ->> 'channel_id')::uuid,
                NEW.reply_to - 'also', 'turn:' || NEW.id || ':answer', payload)
        ON CONFLICT (tenant_id, dedupe_key) DO NOTHING;
    END IF;
    FOR dest IN SELECT * FROM jsonb_array_elements(COALESCE(NEW.reply_to -> 'also', '[]'::jsonb)) LOOP
        n := n + 1;
        CONTINUE WHEN NOT hermes_tenant_channel(NEW.tenant_id, dest);
        INSERT INTO outbox (id, tenant_id, turn_id, channel_id, destination, dedupe_key, payload)
        VALUES (gen_random_uuid(), NEW.tenant_id, NEW.id, (dest ->> 'channel_id')::uuid, dest,
                'turn:' || NEW.id || ':answer:' || n, payload)
        ON CONFLICT (tenant_id, dedupe_key) DO NOTHING;
    END LOOP;
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION interaction_to_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    destination jsonb;
BEGIN
    IF current_setting('hermes.outbox_by_app', true) = 'on' THEN
        RETURN NEW;
    END IF;
    SELECT reply_to INTO destination FROM turns WHERE tenant_id = NEW.tenant_id AND id = NEW.turn_id;
    IF destination IS NOT NULL AND hermes_tenant_channel(NEW.tenant_id, destination) THEN
        INSERT INTO outbox (id, tenant_id, turn_id, channel_id, destination, dedupe_key, payload)
        VALUES (gen_random_uuid(), NEW.tenant_id, NEW.turn_id, (destination ->> 'channel_id')::uuid, destination,
                'interaction:' || NEW.id,
                jsonb_build_object('kind', 'interaction', 'interaction',
                    jsonb_build_object('id', NEW.id, 'kind', NEW.kind, 'prompt', NEW.prompt,
                                       'expires_at', NEW.expires_at)))
        ON CONFLICT (tenant_id, dedupe_key) DO NOTHING;
    END IF;
    RETURN NEW;
END
$$;
