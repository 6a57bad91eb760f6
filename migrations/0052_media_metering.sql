-- Media calls (image generation, speech, transcription) are metered like model calls
-- (issue 21): each is a `model_calls` row with its purpose (`image`, `speech`,
-- `transcription`) and the units the service bills (images, characters spoken, audio
-- milliseconds), priced by the same trigger from per-unit prices, so usage reports, rollups
-- and spending caps count them with no path of their own.
ALTER TABLE model_prices
    ADD COLUMN usd_per_image        numeric(12, 6) CHECK (usd_per_image >= 0),
    -- per million characters spoken (how OpenAI and ElevenLabs bill speech)
    ADD COLUMN usd_per_mchar        numeric(12, 6) CHECK (usd_per_mchar >= 0),
    ADD COLUMN usd_per_audio_minute numeric(12, 6) CHECK (usd_per_audio_minute >= 0);

ALTER TABLE model_calls
    ADD COLUMN images       integer NOT NULL DEFAULT 0 CHECK (images >= 0),
    ADD COLUMN speech_chars bigint NOT NULL DEFAULT 0 CHECK (speech_chars >= 0),
    ADD COLUMN audio_ms     bigint NOT NULL DEFAULT 0 CHECK (audio_ms >= 0);

-- As migration 0012's, plus the units: a call with units its price row has no price for is
-- unpriced (NULL), never free.
CREATE OR REPLACE FUNCTION hermes_price_model_call() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    p model_prices%ROWTYPE;
BEGIN
    SELECT agent_id INTO NEW.agent_id FROM sessions WHERE tenant_id = NEW.tenant_id AND id = NEW.session_id;
    SELECT api_key_id INTO NEW.api_key_id FROM turns WHERE tenant_id = NEW.tenant_id AND id = NEW.turn_id;
    SELECT * INTO p FROM model_prices
     WHERE model = NEW.model OR (right(model, 1) = '*' AND starts_with(NEW.model, left(model, -1)))
     ORDER BY model = NEW.model DESC, length(model) DESC
     LIMIT 1;
    IF FOUND
       AND (NEW.images = 0 OR p.usd_per_image IS NOT NULL)
       AND (NEW.speech_chars = 0 OR p.usd_per_mchar IS NOT NULL)
       AND (NEW.audio_ms = 0 OR p.usd_per_audio_minute IS NOT NULL) THEN
        NEW.cost_usd := (
            GREATEST(NEW.prompt_tokens - NEW.cached_tokens - NEW.cache_write_tokens, 0) * p.input_usd_per_mtok
            + NEW.cached_tokens * COALESCE(p.cached_input_usd_per_mtok, p.input_usd_per_mtok)
            + NEW.cache_write_tokens * COALESCE(p.cache_write_usd_per_mtok, p.input_usd_per_mtok)
            + NEW.completion_tokens * p.output_usd_per_mtok
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

-- Edge TTS is free: its calls are counted at no cost rather than as unpriced (an operator
-- can still set a price of its own).
INSERT INTO model_prices (model, input_usd_per_mtok, output_usd_per_mtok, usd_per_mchar)
VALUES ('edge-tts', 0, 0, 0)
ON CONFLICT (model) DO NOTHING;
