-- A chat message waits a moment before its turn starts, so the next part of a message the chat
-- app split in parts can join it (upstream batches Telegram text for 0.3 s). Workers do not
-- start a queued turn before `not_before`.
ALTER TABLE turns ADD COLUMN not_before timestamptz;
