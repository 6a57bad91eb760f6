-- Turns that wait for the user: dangerous-command approvals and clarifying questions.
ALTER TYPE turn_status ADD VALUE IF NOT EXISTS 'waiting';

-- How the agent's dangerous commands are approved: never asked (off), by the user (manual),
-- or by the auxiliary model first (smart).
ALTER TABLE agents ADD COLUMN approval_mode text NOT NULL DEFAULT 'manual'
    CHECK (approval_mode IN ('off', 'manual', 'smart'));

-- One question a parked turn waits on. The turn resumes when it is answered or expires.
CREATE TABLE interactions (
    id          uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL,
    turn_id     uuid NOT NULL,
    session_id  uuid NOT NULL,
    agent_id    uuid NOT NULL,
    -- the tool call that asked; it runs again with the answer
    call_id     text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('approval', 'clarify')),
    prompt      jsonb NOT NULL,
    status      text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered', 'expired')),
    -- {"choice": "once|session|always|deny"}, {"text": ...} or {"expired": true}
    answer      jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    answered_at timestamptz,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, turn_id) REFERENCES turns (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX interactions_by_turn ON interactions (tenant_id, turn_id, created_at DESC);
CREATE INDEX interactions_expiring ON interactions (expires_at) WHERE status = 'pending';

-- Dangerous-command patterns the user allowed: for the agent ("always", session_id NULL) or
-- for one session ("session").
CREATE TABLE approval_grants (
    tenant_id   uuid NOT NULL,
    agent_id    uuid NOT NULL,
    session_id  uuid,
    pattern_key text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX approval_grants_unique
    ON approval_grants (tenant_id, agent_id, COALESCE(session_id, '00000000-0000-0000-0000-000000000000'::uuid), pattern_key);
