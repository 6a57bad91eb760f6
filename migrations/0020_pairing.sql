-- Pairing: an unknown person in a direct chat gets a one-time code; an admin approves it
-- (hermesctl, or /pair approve CODE in chat) and the person joins the channel's allowlist.
-- Codes last an hour, at most 3 wait per channel, one per person at a time; five wrong codes
-- lock approvals for an hour.
CREATE TABLE pairing_requests (
    tenant_id  uuid NOT NULL,
    channel_id uuid NOT NULL,
    code       text NOT NULL,
    user_id    text NOT NULL,
    user_name  text,
    chat_id    text NOT NULL,
    status     text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'expired')),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (channel_id, code),
    FOREIGN KEY (tenant_id, channel_id) REFERENCES channels (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX pairing_by_user ON pairing_requests (channel_id, user_id, created_at);

ALTER TABLE channels ADD COLUMN pairing_failures integer NOT NULL DEFAULT 0;
ALTER TABLE channels ADD COLUMN pairing_locked_until timestamptz;
