-- Models as teams use them (issue 40).
--
-- Per agent: sampling and reasoning defaults (`hermes_core::ModelSettings`) and what API callers
-- may ask for per request (`hermes_core::ClientLimits`). `{}`: the provider's defaults and no
-- limits beyond the provider's, what every agent had so far.
ALTER TABLE agents
    ADD COLUMN IF NOT EXISTS model_settings jsonb NOT NULL DEFAULT '{}'::jsonb,
    ADD COLUMN IF NOT EXISTS client_limits jsonb NOT NULL DEFAULT '{}'::jsonb;

-- What a conversation's chat commands asked of the model (`/reasoning`, `/fast`), over its
-- agent's settings.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS model_settings jsonb NOT NULL DEFAULT '{}'::jsonb;

-- What an API request asked of the model (temperature, top_p, max tokens, reasoning effort,
-- priority), within its agent's `client_limits`: over the agent's settings for that turn only.
ALTER TABLE turns ADD COLUMN IF NOT EXISTS model_settings jsonb;

-- Reasoning a provider wants back verbatim on later calls (Anthropic's signed thinking blocks,
-- the Responses API's encrypted reasoning items), with the endpoint and model that wrote it
-- (`hermes_core::ReasoningReplay`). Never shown to clients.
ALTER TABLE messages ADD COLUMN IF NOT EXISTS reasoning_replay jsonb;

-- Completion tokens spent reasoning (part of completion_tokens, billed as output), and cache
-- writes, in the ledger and the daily rollups.
ALTER TABLE model_calls ADD COLUMN IF NOT EXISTS reasoning_tokens bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_daily
    ADD COLUMN IF NOT EXISTS cache_write_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS reasoning_tokens bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION hermes_roll_up_calls() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_daily AS u (tenant_id, day, agent_id, model, source, shard, calls, prompt_tokens,
                                  completion_tokens, cached_tokens, cache_write_tokens, reasoning_tokens,
                                  cost_usd, unpriced_calls)
    SELECT c.tenant_id, (c.created_at AT TIME ZONE 'UTC')::date,
           COALESCE(c.agent_id, s.agent_id, '00000000-0000-0000-0000-000000000000'),
           c.model, hermes_usage_source(s.source), (pg_backend_pid() % 4)::smallint,
           count(*), sum(c.prompt_tokens), sum(c.completion_tokens), sum(c.cached_tokens),
           sum(c.cache_write_tokens), sum(c.reasoning_tokens),
           COALESCE(sum(c.cost_usd), 0), count(*) FILTER (WHERE c.cost_usd IS NULL)
    FROM added c LEFT JOIN sessions s ON s.tenant_id = c.tenant_id AND s.id = c.session_id
    GROUP BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (tenant_id, day, agent_id, model, source, shard) DO UPDATE SET
        calls = u.calls + EXCLUDED.calls,
        prompt_tokens = u.prompt_tokens + EXCLUDED.prompt_tokens,
        completion_tokens = u.completion_tokens + EXCLUDED.completion_tokens,
        cached_tokens = u.cached_tokens + EXCLUDED.cached_tokens,
        cache_write_tokens = u.cache_write_tokens + EXCLUDED.cache_write_tokens,
        reasoning_tokens = u.reasoning_tokens + EXCLUDED.reasoning_tokens,
        cost_usd = u.cost_usd + EXCLUDED.cost_usd,
        unpriced_calls = u.unpriced_calls + EXCLUDED.unpriced_calls;
    RETURN NULL;
END
$$;

-- Cache writes recorded before this migration, on each key's shard 0 (readers sum the shards).
INSERT INTO usage_daily AS u (tenant_id, day, agent_id, model, source, shard, cache_write_tokens)
SELECT c.tenant_id, (c.created_at AT TIME ZONE 'UTC')::date,
       COALESCE(c.agent_id, s.agent_id, '00000000-0000-0000-0000-000000000000'), c.model,
       hermes_usage_source(s.source), 0, sum(c.cache_write_tokens)
FROM model_calls c LEFT JOIN sessions s ON s.tenant_id = c.tenant_id AND s.id = c.session_id
GROUP BY 1, 2, 3, 4, 5
HAVING sum(c.cache_write_tokens) > 0
ON CONFLICT (tenant_id, day, agent_id, model, source, shard) DO UPDATE SET
    cache_write_tokens = u.cache_write_tokens + EXCLUDED.cache_write_tokens;
