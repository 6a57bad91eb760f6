-- A group chat is one conversation (`chat`, the default) or one per person in it (`user`).
ALTER TABLE channels ADD COLUMN group_sessions text NOT NULL DEFAULT 'chat'
    CHECK (group_sessions IN ('chat', 'user'));
