-- Where an agent's model calls go (issue 40).
--
-- `provider_routing`: OpenRouter's provider preferences for the agent (`hermes_core::ProviderRouting`);
-- `{}`: OpenRouter's defaults, what every agent had so far.
-- `auxiliary_models`: each side task's own models (`compression`, `vision`, `approval`,
-- `goal_judge`, `review`), a fallback chain each (`hermes_wire::admin::AuxiliaryModels`);
-- `{}`: every task on the agent's auxiliary model, else its main one, as so far.
ALTER TABLE agents
    ADD COLUMN IF NOT EXISTS provider_routing jsonb NOT NULL DEFAULT '{}'::jsonb,
    ADD COLUMN IF NOT EXISTS auxiliary_models jsonb NOT NULL DEFAULT '{}'::jsonb;

-- Whether a chat channel shows the model's reasoning above each answer (upstream's
-- `display.show_reasoning`); off, as every channel was so far.
ALTER TABLE channels ADD COLUMN IF NOT EXISTS show_reasoning boolean NOT NULL DEFAULT false;
