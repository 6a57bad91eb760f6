-- How an agent's model is shown the images people send (upstream's `agent.image_input_mode`):
-- `native` attaches them as image parts, `text` has the vision model describe them first,
-- `auto` decides from the model. `vision_model` is the model that describes images and
-- answers `vision_analyze` (upstream's `auxiliary.vision`): `{"model", "base_url", "api_mode"?}`,
-- its keys from the tenant's pool for its provider, like a fallback's.
ALTER TABLE agents
    ADD COLUMN image_input_mode text NOT NULL DEFAULT 'auto'
        CHECK (image_input_mode IN ('auto', 'native', 'text')),
    ADD COLUMN vision_model jsonb;
