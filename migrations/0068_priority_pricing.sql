-- Calls served on a provider's priority tier (issue 40: `/fast`), priced at their premium.
--
-- `model_calls.priority`: the provider said its priority tier served the call (OpenAI's
-- `service_tier` `priority`/`fast`, Anthropic's `speed: fast`).
-- `model_prices.priority_multiplier`: what that tier costs over the model's rates (OpenAI's
-- priority is about 2x, Anthropic's fast mode up to 6x). NULL: no premium known, so the call
-- costs the standard rate: never NULL (unpriced calls count nothing against spending caps).
ALTER TABLE model_calls ADD COLUMN IF NOT EXISTS priority boolean NOT NULL DEFAULT false;
ALTER TABLE model_prices
    ADD COLUMN IF NOT EXISTS priority_multiplier numeric(8, 4) CHECK (priority_multiplier >= 1);

CREATE OR REPLACE FUNCTION hermes_price_model_call() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    p model_prices%ROWTYPE;
    tier numeric := 1;
BEGIN
    SELECT agent_id INTO NEW.agent_id FROM sessions WHERE tenant_id = NEW.tenant_id AND id = NEW.session_id;
    SELECT api_key_id INTO NEW.api_key_id FROM turns WHERE tenant_id = NEW.tenant_id AND id = NEW.turn_id;
    SELECT * INTO p FROM model_prices
     WHERE model = NEW.model OR (right(model, 1) = '*' AND starts_with(NEW.model, left(model, -1)))
     ORDER BY model = NEW.model DESC, length(model) DESC
     LIMIT 1;
    IF FOUND AND NEW.priority THEN
        tier := COALESCE(p.priority_multiplier, 1);
    END IF;
    IF FOUND
       AND (NEW.images = 0 OR p.usd_per_image IS NOT NULL)
       AND (NEW.speech_chars = 0 OR p.usd_per_mchar IS NOT NULL)
       AND (NEW.audio_ms = 0 OR p.usd_per_audio_minute IS NOT NULL) THEN
        NEW.cost_usd := (
            (GREATEST(NEW.prompt_tokens - NEW.cached_tokens - NEW.cache_write_tokens, 0) * p.input_usd_per_mtok
             + NEW.cached_tokens * COALESCE(p.cached_input_usd_per_mtok, p.input_usd_per_mtok)
             + NEW.cache_write_tokens * COALESCE(p.cache_write_usd_per_mtok, p.input_usd_per_mtok)
             + NEW.completion_tokens * p.output_usd_per_mtok) * tier
            + NEW.speech_chars * COALESCE(p.usd_per_mchar, 0)
        ) / 1000000
            + NEW.images * COALESCE(p.usd_per_image, 0)
            + NEW.audio_ms * COALESCE(p.usd_per_audio_minute, 0) / 60000;
    ELSE
        NEW.cost_usd := NULL;
    END IF;
    RETURN NEW;
END
$$;
