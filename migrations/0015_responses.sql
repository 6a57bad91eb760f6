-- The Responses API (POST /v1/responses). A response is a turn; this row holds what a turn
-- does not: the model name the client asked for, the response it continues, its conversation
-- name. Only stored responses (`store`, the default) have a row, so `store: false` ones can
-- be neither read back nor continued. Rows go with their turn (and so with their session).
CREATE TABLE responses (
    tenant_id        uuid NOT NULL,
    turn_id          uuid NOT NULL,
    model            text NOT NULL,
    previous_turn_id uuid,
    conversation     text,
    truncation       text NOT NULL DEFAULT 'disabled',
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, turn_id),
    FOREIGN KEY (tenant_id, turn_id) REFERENCES turns (tenant_id, id) ON DELETE CASCADE
);

-- A named conversation continues from its latest stored response.
CREATE TABLE response_conversations (
    tenant_id  uuid NOT NULL,
    name       text NOT NULL,
    turn_id    uuid NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name),
    FOREIGN KEY (tenant_id, turn_id) REFERENCES responses (tenant_id, turn_id) ON DELETE CASCADE
);
