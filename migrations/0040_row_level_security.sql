-- The second wall (issue 17): row-level security on every tenant table.
--
-- Every query of the store already filters by the tenant its caller authenticated. These
-- policies make Postgres enforce the same thing, so a query that forgets its `WHERE tenant_id`
-- finds nothing of another tenant's instead of leaking it.
--
-- Two roles, neither able to log in; the store's pools connect as the installation's database
-- user (the owner of these tables, who runs the migrations) and `SET ROLE` to one of them:
-- * `hermes_tenant`: every tenant-scoped query. It sees and writes only the rows of the tenant
--   named by the `hermes.tenant_id` setting, which the store sets for each connection it hands
--   out (`SET LOCAL` in a transaction) and resets when the connection goes back to the pool.
--   With no tenant set it sees nothing.
-- * `hermes_system`: the named paths that work for every tenant at once or before a tenant is
--   known (`libs/store/src/system/`, API-key authentication, the operator's tenant commands,
--   the bundled skills). Its policies are `system_paths`.
-- The owner itself is not subject to the policies (no FORCE): migrations move data freely.
--
-- A database user without CREATEROLE cannot run this file: create the two roles beforehand
-- (`CREATE ROLE hermes_tenant NOLOGIN; CREATE ROLE hermes_system NOLOGIN;`) and grant both to
-- the installation's user.

DO $$
BEGIN
    CREATE ROLE hermes_tenant NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL; -- another database of this cluster (or a concurrent migration) made it
END $$;
DO $$
BEGIN
    CREATE ROLE hermes_system NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END $$;
DO $$
BEGIN
    IF NOT pg_has_role(current_user, 'hermes_tenant', 'MEMBER') THEN
        EXECUTE format('GRANT hermes_tenant TO %I', current_user);
    END IF;
    IF NOT pg_has_role(current_user, 'hermes_system', 'MEMBER') THEN
        EXECUTE format('GRANT hermes_system TO %I', current_user);
    END IF;
EXCEPTION WHEN unique_violation THEN
    NULL;
END $$;

-- The tenant the current transaction (or connection) works for; NULL when none is set.
CREATE FUNCTION hermes_tenant() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT NULLIF(current_setting('hermes.tenant_id', true), '')::uuid $$;

GRANT USAGE ON SCHEMA public TO hermes_tenant, hermes_system;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO hermes_tenant, hermes_system;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO hermes_tenant, hermes_system;
DO $$
BEGIN
    IF to_regclass('_sqlx_migrations') IS NOT NULL THEN
        REVOKE ALL ON _sqlx_migrations FROM hermes_tenant, hermes_system;
    END IF;
END $$;
-- Prices are the installation's: tenants read them, only the operator sets them.
REVOKE INSERT, UPDATE, DELETE ON model_prices FROM hermes_tenant;
-- Tables of later migrations get the same grants; their policies come with them.
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO hermes_tenant, hermes_system;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO hermes_tenant, hermes_system;

-- Every table with a tenant_id column: the tenant's own rows, and everything for the system.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY[
        'agents', 'api_keys', 'approval_grants', 'budgets', 'channels', 'chat_streams',
        'cron_fires', 'cron_jobs', 'cron_runs', 'event_deliveries', 'event_hooks',
        'idempotency_keys', 'inbound', 'interactions', 'memories', 'messages', 'model_calls',
        'outbox', 'pairing_requests', 'provider_credentials', 'provider_pools',
        'response_conversations', 'responses', 'session_goals', 'session_routes',
        'session_todos', 'sessions', 'skill_events', 'skill_usage', 'turn_files', 'turns',
        'webhooks'
    ] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_rows ON %I TO hermes_tenant
                 USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant())', t);
        EXECUTE format('CREATE POLICY system_paths ON %I TO hermes_system USING (true) WITH CHECK (true)', t);
    END LOOP;
END $$;

-- The tenant's own row.
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON tenants TO hermes_tenant
    USING (id = hermes_tenant()) WITH CHECK (id = hermes_tenant());
CREATE POLICY system_paths ON tenants TO hermes_system USING (true) WITH CHECK (true);

-- Bundled skills (no tenant) are read by every tenant and written only by the system.
ALTER TABLE skills ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON skills TO hermes_tenant
    USING (tenant_id = hermes_tenant() OR tenant_id IS NULL) WITH CHECK (tenant_id = hermes_tenant());
CREATE POLICY system_paths ON skills TO hermes_system USING (true) WITH CHECK (true);

-- A skill's files belong to whoever its skill belongs to (the subquery is itself under the
-- skills policy).
ALTER TABLE skill_files ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON skill_files TO hermes_tenant
    USING (EXISTS (SELECT 1 FROM skills s WHERE s.id = skill_id))
    WITH CHECK (EXISTS (SELECT 1 FROM skills s WHERE s.id = skill_id AND s.tenant_id = hermes_tenant()));
CREATE POLICY system_paths ON skill_files TO hermes_system USING (true) WITH CHECK (true);

-- Index versions: the tenant's scope (its id) and the bundled catalogue's (the nil id).
ALTER TABLE skill_versions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON skill_versions TO hermes_tenant
    USING (scope = hermes_tenant() OR scope = '00000000-0000-0000-0000-000000000000')
    WITH CHECK (scope = hermes_tenant());
CREATE POLICY system_paths ON skill_versions TO hermes_system USING (true) WITH CHECK (true);

-- A webhook's seen deliveries belong to whoever the webhook belongs to.
ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON webhook_deliveries TO hermes_tenant
    USING (EXISTS (SELECT 1 FROM webhooks w WHERE w.id = webhook_id))
    WITH CHECK (EXISTS (SELECT 1 FROM webhooks w WHERE w.id = webhook_id));
CREATE POLICY system_paths ON webhook_deliveries TO hermes_system USING (true) WITH CHECK (true);

-- Full-text search under a row policy: Postgres does not use the (tenant_id, search) GIN index
-- for `@@` when a policy applies, because `@@` is not leakproof, and scans every message of
-- the tenant instead. The matching step therefore runs as the owner, in this function, for
-- the tenant the caller's own `hermes.tenant_id` names, never for one it passes in.
CREATE FUNCTION hermes_message_matches(query tsquery, roles text[])
    RETURNS TABLE (session_id uuid, seq integer, content jsonb, created_at timestamptz, rank real)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
    BEGIN
        -- EXECUTE plans with the values (a generic plan cannot judge the tsquery).
        RETURN QUERY EXECUTE
            'SELECT m.session_id, m.seq, m.content, m.created_at, ts_rank_cd(m.search, $1)
               FROM messages m
              WHERE m.tenant_id = $3 AND m.search @@ $1 AND m.role = ANY($2)'
            USING query, roles, hermes_tenant();
    END
    $$;
REVOKE ALL ON FUNCTION hermes_message_matches(tsquery, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION hermes_message_matches(tsquery, text[]) TO hermes_tenant;

-- A reply names its channel by (tenant, channel): it can never point at another tenant's bot.
-- The triggers that queue answers and questions skip a destination whose channel is not the
-- tenant's (deleted while the turn ran, or never its own): there is no bot to send it with.
CREATE OR REPLACE FUNCTION hermes_tenant_channel(tenant uuid, destination jsonb) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
        SELECT destination ->> 'channel_id' IS NULL
            OR EXISTS (SELECT 1 FROM channels c
                        WHERE c.tenant_id = tenant AND c.id = (destination ->> 'channel_id')::uuid)
    $$;

CREATE OR REPLACE FUNCTION turn_reply_to_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    dest jsonb;
    n integer := 0;
    payload jsonb := jsonb_build_object('kind', 'answer', 'status', NEW.status::text, 'outcome', NEW.outcome);
BEGIN
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

-- Rows already queued whose channel is gone (or was never the tenant's) cannot be delivered;
-- they go.
DELETE FROM outbox o
 WHERE o.channel_id IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM channels c WHERE c.tenant_id = o.tenant_id AND c.id = o.channel_id);
ALTER TABLE outbox
    ADD CONSTRAINT outbox_channel_fkey FOREIGN KEY (tenant_id, channel_id)
        REFERENCES channels (tenant_id, id) ON DELETE CASCADE;
