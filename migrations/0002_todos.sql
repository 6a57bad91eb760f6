-- The agent's task list of a session (the `todo` tool): ordered items {id, content, status}.
CREATE TABLE session_todos (
    tenant_id   uuid NOT NULL,
    session_id  uuid NOT NULL,
    items       jsonb NOT NULL DEFAULT '[]',
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, session_id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE
);
