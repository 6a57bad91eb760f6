-- Idempotency-Key: a retried POST with the same key (per API key) and the same request joins
-- the turn the first one started instead of starting another, whichever API pod it reaches.
-- Keys are remembered for a day.
CREATE TABLE idempotency_keys (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    api_key_id  uuid NOT NULL,
    key         text NOT NULL,
    fingerprint text NOT NULL,
    session_id  uuid NOT NULL,
    turn_id     uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, api_key_id, key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
