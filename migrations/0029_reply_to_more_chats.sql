-- A turn's answer may go to more than one chat (a cron job delivering to a comma list of
-- targets): `reply_to.also` lists further destinations, each its own outbox row (own dedupe key,
-- so each is sent exactly once), all in the transaction that ends the turn.
CREATE OR REPLACE FUNCTION turn_reply_to_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    dest jsonb;
    n integer := 0;
    payload jsonb := jsonb_build_object('kind', 'answer', 'status', NEW.status::text, 'outcome', NEW.outcome);
BEGIN
    INSERT INTO outbox (id, tenant_id, turn_id, channel_id, destination, dedupe_key, payload)
    VALUES (gen_random_uuid(), NEW.tenant_id, NEW.id, (NEW.reply_to ->> 'channel_id')::uuid,
            NEW.reply_to - 'also', 'turn:' || NEW.id || ':answer', payload)
    ON CONFLICT (tenant_id, dedupe_key) DO NOTHING;
    FOR dest IN SELECT * FROM jsonb_array_elements(COALESCE(NEW.reply_to -> 'also', '[]'::jsonb)) LOOP
        n := n + 1;
        INSERT INTO outbox (id, tenant_id, turn_id, channel_id, destination, dedupe_key, payload)
        VALUES (gen_random_uuid(), NEW.tenant_id, NEW.id, (dest ->> 'channel_id')::uuid, dest,
                'turn:' || NEW.id || ':answer:' || n, payload)
        ON CONFLICT (tenant_id, dedupe_key) DO NOTHING;
    END LOOP;
    RETURN NEW;
END;
$$;
