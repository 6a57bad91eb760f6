-- What a chat's new message does while the agent still works on the last one: `interrupt`
-- stops that turn and answers the new message (upstream's default), `queue` answers each in
-- turn (at most 32 waiting). A message that arrives before the last one even started is merged
-- into it either way (a long paste that the chat app split in parts).
ALTER TABLE channels ADD COLUMN busy_mode text NOT NULL DEFAULT 'interrupt'
    CHECK (busy_mode IN ('interrupt', 'queue'));
