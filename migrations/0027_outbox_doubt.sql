-- A part of a reply on its way to the platform: set just before the send, cleared when the part
-- is recorded. A pod that claims a reply with a part in doubt (its sender died between sending
-- and recording) first asks the platform whether that part arrived, where the platform can say.
ALTER TABLE outbox ADD COLUMN doubt_part integer;
ALTER TABLE outbox ADD COLUMN doubt_since timestamptz;
