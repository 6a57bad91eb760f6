-- Files a chat answer hands over (`MEDIA:<path>` lines): read from the agent's workspace by the
-- worker when the turn ends, before its answer reaches the outbox, and sent by the gateway
-- after the answer's text. A file that could not be read keeps its error, which the chat is
-- told. They go with their turn.
CREATE TABLE turn_files (
    tenant_id  uuid NOT NULL,
    turn_id    uuid NOT NULL,
    target     text NOT NULL,
    name       text NOT NULL,
    mime       text NOT NULL,
    data       bytea,
    error      text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (turn_id, target),
    FOREIGN KEY (tenant_id, turn_id) REFERENCES turns (tenant_id, id) ON DELETE CASCADE
);
