-- Images and resources per agent (issue 38): the image (by the operator's name for it, from
-- `sandbox.images`) and the CPU, memory, disk and process limits an agent's sandboxes get,
-- within the operator's `sandbox.max`. `{}`: the installation's defaults, what every agent
-- had so far.
ALTER TABLE agents ADD COLUMN IF NOT EXISTS sandbox jsonb NOT NULL DEFAULT '{}'::jsonb;
