-- Who the session's end user is, for their USER profile: `api-key:<id>` or
-- `session-key:<X-Hermes-Session-Key>` on the API, `<platform>:<user id>` on chat platforms.
-- Compacted and delegated sessions inherit it.
ALTER TABLE sessions ADD COLUMN user_key text NOT NULL DEFAULT '';

-- Curated memory. MEMORY (target 'memory') is the agent's own notes, one per agent
-- (user_key ''); USER (target 'user') is one per agent and end user. Entries are kept in
-- order; `version` makes concurrent writers retry instead of losing an update.
CREATE TABLE memories (
    tenant_id  uuid NOT NULL,
    agent_id   uuid NOT NULL,
    target     text NOT NULL CHECK (target IN ('memory', 'user')),
    user_key   text NOT NULL,
    entries    text[] NOT NULL DEFAULT '{}',
    version    bigint NOT NULL DEFAULT 1,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, agent_id, target, user_key),
    CHECK (target = 'user' OR user_key = ''),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
