-- Tool progress in place (upstream's `display.tool_progress`): while the agent runs a tool, the
-- chat shows one message, edited as tools start and finish, and removed when the answer comes.
-- Only where messages can be edited (Telegram, Slack).
ALTER TABLE channels ADD COLUMN tool_progress boolean NOT NULL DEFAULT true;
