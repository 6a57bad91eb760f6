-- Narrower tools for wider audiences (issue 38): a chat bot's rules per kind of chat and per
-- chat, an API key's and a webhook's list of the only toolsets its turns may use. NULL or an
-- empty object: the agent's toolsets. Only added columns with defaults: the previous release
-- reads and writes these tables unchanged.
ALTER TABLE channels ADD COLUMN IF NOT EXISTS toolsets jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS toolsets text[];
ALTER TABLE webhooks ADD COLUMN IF NOT EXISTS toolsets text[];
