-- Per-turn metering besides model calls: how long the turn's tool calls took, and how much of
-- that ran in the agent's sandbox. Added to as each call ends, so a resumed turn keeps both
-- attempts' time.
ALTER TABLE turns ADD COLUMN tool_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN sandbox_ms bigint NOT NULL DEFAULT 0;
