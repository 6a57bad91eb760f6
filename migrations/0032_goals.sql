-- Standing goals (`/goal`): per session, a goal the agent keeps working toward. After each of
-- the session's turns a judge decides whether it is met; if not, the worker queues a
-- continuation turn, up to `max_turns`.
CREATE TABLE session_goals (
    tenant_id        uuid NOT NULL,
    session_id       uuid NOT NULL,
    goal             text NOT NULL,
    state            text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'paused', 'done')),
    turns_used       integer NOT NULL DEFAULT 0,
    max_turns        integer NOT NULL,
    -- judge answers in a row that could not be read (three pause the goal)
    judge_failures   integer NOT NULL DEFAULT 0,
    last_reason      text,
    -- the last turn judged: a turn resumed on another worker is not counted twice
    last_judged_turn uuid,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, session_id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE
);
