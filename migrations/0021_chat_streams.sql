-- Streaming a chat answer as it is written (opt-in per channel, as upstream): the gateway pod
-- that took the message in shows a preview message it edits as text arrives; the outbox then
-- sends the answer for good and removes the preview. `finalized` hands the preview over: once
-- the outbox set it, the streaming pod stops (and removes a preview it sent too late).
ALTER TABLE channels ADD COLUMN streaming boolean NOT NULL DEFAULT false;

CREATE TABLE chat_streams (
    tenant_id  uuid NOT NULL,
    turn_id    uuid NOT NULL,
    chat_id    text NOT NULL,
    message_id text,
    finalized  boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, turn_id),
    FOREIGN KEY (tenant_id, turn_id) REFERENCES turns (tenant_id, id) ON DELETE CASCADE
);
