-- Usage in money: a price table the operator edits (per million tokens; `model` is a model id,
-- or a prefix ending in '*'), and each model call priced when it is recorded (so a later price
-- change never rewrites history), attributed to its agent and API key.
CREATE TABLE model_prices (
    model                     text PRIMARY KEY,
    input_usd_per_mtok        numeric(12, 6) NOT NULL CHECK (input_usd_per_mtok >= 0),
    output_usd_per_mtok       numeric(12, 6) NOT NULL CHECK (output_usd_per_mtok >= 0),
    -- NULL: billed like other input
    cached_input_usd_per_mtok numeric(12, 6) CHECK (cached_input_usd_per_mtok >= 0),
    cache_write_usd_per_mtok  numeric(12, 6) CHECK (cache_write_usd_per_mtok >= 0),
    updated_at                timestamptz NOT NULL DEFAULT now()
);

-- The API key a turn came in with (NULL: a chat platform, cron, ...).
ALTER TABLE turns ADD COLUMN api_key_id uuid;

ALTER TABLE model_calls
    ADD COLUMN agent_id uuid,
    ADD COLUMN api_key_id uuid,
    -- NULL: no price known for the model when the call was recorded
    ADD COLUMN cost_usd numeric(16, 8);
CREATE INDEX model_calls_by_agent ON model_calls (tenant_id, agent_id, created_at);

-- Every insert path of model_calls (turn checkpoints, finishes, reviews) gets the same
-- attribution and price, from the rows the call belongs to.
CREATE FUNCTION hermes_price_model_call() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    p model_prices%ROWTYPE;
BEGIN
    SELECT agent_id INTO NEW.agent_id FROM sessions WHERE tenant_id = NEW.tenant_id AND id = NEW.session_id;
    SELECT api_key_id INTO NEW.api_key_id FROM turns WHERE tenant_id = NEW.tenant_id AND id = NEW.turn_id;
    SELECT * INTO p FROM model_prices
     WHERE model = NEW.model OR (right(model, 1) = '*' AND starts_with(NEW.model, left(model, -1)))
     ORDER BY model = NEW.model DESC, length(model) DESC
     LIMIT 1;
    IF FOUND THEN
        NEW.cost_usd := (
            GREATEST(NEW.prompt_tokens - NEW.cached_tokens - NEW.cache_write_tokens, 0) * p.input_usd_per_mtok
            + NEW.cached_tokens * COALESCE(p.cached_input_usd_per_mtok, p.input_usd_per_mtok)
            + NEW.cache_write_tokens * COALESCE(p.cache_write_usd_per_mtok, p.input_usd_per_mtok)
            + NEW.completion_tokens * p.output_usd_per_mtok
        ) / 1000000;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER model_calls_priced BEFORE INSERT ON model_calls
    FOR EACH ROW EXECUTE FUNCTION hermes_price_model_call();
