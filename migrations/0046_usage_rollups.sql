-- Daily usage rollups (issue 20): one row per tenant, day (UTC), agent, model, source and
-- shard, kept up to date by triggers as model calls are recorded and turns end, so a usage
-- page reads a few rows a day however many calls there were. Every path that records a call
-- or ends a turn is covered, because the triggers are on the tables themselves.
--
-- `shard` spreads concurrent writers of one key over four rows (by backend), so two workers
-- finishing turns of the same agent at once do not queue on one row lock; readers sum them.
-- `model` is '' on the rows that count turns, tool and sandbox time (a turn has no one model).
CREATE TABLE usage_daily (
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    day               date NOT NULL,
    agent_id          uuid NOT NULL,
    model             text NOT NULL,
    source            text NOT NULL CHECK (source IN ('api', 'chat', 'cron', 'webhook', 'other')),
    shard             smallint NOT NULL,
    calls             bigint NOT NULL DEFAULT 0,
    prompt_tokens     bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    cached_tokens     bigint NOT NULL DEFAULT 0,
    cost_usd          numeric(20, 8) NOT NULL DEFAULT 0,
    unpriced_calls    bigint NOT NULL DEFAULT 0,
    turns             bigint NOT NULL DEFAULT 0,
    tool_ms           bigint NOT NULL DEFAULT 0,
    sandbox_ms        bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, day, agent_id, model, source, shard)
);

ALTER TABLE usage_daily ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON usage_daily TO hermes_tenant
    USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant());
CREATE POLICY system_paths ON usage_daily TO hermes_system USING (true) WITH CHECK (true);

-- Where a session's work came from, as the usage page groups it.
CREATE FUNCTION hermes_usage_source(source text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE
        WHEN source IN ('telegram', 'slack', 'wecom') THEN 'chat'
        WHEN source IN ('api', 'cron', 'webhook') THEN source
        ELSE 'other' END $$;

-- The calls one statement recorded, added to their days (one upsert per key, not per call).
CREATE FUNCTION hermes_roll_up_calls() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_daily AS u (tenant_id, day, agent_id, model, source, shard, calls, prompt_tokens,
                                  completion_tokens, cached_tokens, cost_usd, unpriced_calls)
    SELECT c.tenant_id, (c.created_at AT TIME ZONE 'UTC')::date,
           COALESCE(c.agent_id, s.agent_id, '00000000-0000-0000-0000-000000000000'),
           c.model, hermes_usage_source(s.source), (pg_backend_pid() % 4)::smallint,
           count(*), sum(c.prompt_tokens), sum(c.completion_tokens), sum(c.cached_tokens),
           COALESCE(sum(c.cost_usd), 0), count(*) FILTER (WHERE c.cost_usd IS NULL)
    FROM added c LEFT JOIN sessions s ON s.tenant_id = c.tenant_id AND s.id = c.session_id
    GROUP BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (tenant_id, day, agent_id, model, source, shard) DO UPDATE SET
        calls = u.calls + EXCLUDED.calls,
        prompt_tokens = u.prompt_tokens + EXCLUDED.prompt_tokens,
        completion_tokens = u.completion_tokens + EXCLUDED.completion_tokens,
        cached_tokens = u.cached_tokens + EXCLUDED.cached_tokens,
        cost_usd = u.cost_usd + EXCLUDED.cost_usd,
        unpriced_calls = u.unpriced_calls + EXCLUDED.unpriced_calls;
    RETURN NULL;
END
$$;
CREATE TRIGGER model_calls_rolled_up AFTER INSERT ON model_calls
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION hermes_roll_up_calls();

-- A turn that ends counts once, with the tool and sandbox time it spent, on the day it ended.
CREATE FUNCTION hermes_roll_up_turn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_daily AS u (tenant_id, day, agent_id, model, source, shard, turns, tool_ms, sandbox_ms)
    SELECT NEW.tenant_id, (COALESCE(NEW.finished_at, now()) AT TIME ZONE 'UTC')::date, s.agent_id, '',
           hermes_usage_source(s.source), (pg_backend_pid() % 4)::smallint, 1, NEW.tool_ms, NEW.sandbox_ms
    FROM sessions s WHERE s.tenant_id = NEW.tenant_id AND s.id = NEW.session_id
    ON CONFLICT (tenant_id, day, agent_id, model, source, shard) DO UPDATE SET
        turns = u.turns + 1,
        tool_ms = u.tool_ms + EXCLUDED.tool_ms,
        sandbox_ms = u.sandbox_ms + EXCLUDED.sandbox_ms;
    RETURN NULL;
END
$$;
CREATE TRIGGER turns_rolled_up AFTER UPDATE OF status ON turns
    FOR EACH ROW
    WHEN (NEW.status IN ('completed', 'failed', 'cancelled') AND OLD.status NOT IN ('completed', 'failed', 'cancelled'))
    EXECUTE FUNCTION hermes_roll_up_turn();

-- What was recorded before this migration.
INSERT INTO usage_daily (tenant_id, day, agent_id, model, source, shard, calls, prompt_tokens, completion_tokens,
                         cached_tokens, cost_usd, unpriced_calls)
SELECT c.tenant_id, (c.created_at AT TIME ZONE 'UTC')::date,
       COALESCE(c.agent_id, s.agent_id, '00000000-0000-0000-0000-000000000000'), c.model,
       hermes_usage_source(s.source), 0, count(*), sum(c.prompt_tokens), sum(c.completion_tokens),
       sum(c.cached_tokens), COALESCE(sum(c.cost_usd), 0), count(*) FILTER (WHERE c.cost_usd IS NULL)
FROM model_calls c LEFT JOIN sessions s ON s.tenant_id = c.tenant_id AND s.id = c.session_id
GROUP BY 1, 2, 3, 4, 5;
INSERT INTO usage_daily (tenant_id, day, agent_id, model, source, shard, turns, tool_ms, sandbox_ms)
SELECT t.tenant_id, (COALESCE(t.finished_at, t.created_at) AT TIME ZONE 'UTC')::date, s.agent_id, '',
       hermes_usage_source(s.source), 0, count(*), sum(t.tool_ms), sum(t.sandbox_ms)
FROM turns t JOIN sessions s ON s.tenant_id = t.tenant_id AND s.id = t.session_id
WHERE t.status IN ('completed', 'failed', 'cancelled')
GROUP BY 1, 2, 3, 4, 5;
