-- Per-tenant session policy: the time zone for daily resets (and later cron), when a chat's
-- session is reset (after idle minutes, 0 never; and/or daily at an hour, NULL never), and
-- how many days sessions are kept after their last activity (NULL forever).
ALTER TABLE tenants
    ADD COLUMN timezone text NOT NULL DEFAULT 'UTC',
    ADD COLUMN session_idle_reset_minutes integer NOT NULL DEFAULT 1440 CHECK (session_idle_reset_minutes >= 0),
    ADD COLUMN session_daily_reset_hour smallint DEFAULT 4 CHECK (session_daily_reset_hour BETWEEN 0 AND 23),
    ADD COLUMN session_retention_days integer CHECK (session_retention_days > 0);

-- The current session of each chat (a platform conversation, or any caller-chosen key): new
-- messages go to it until the reset policy starts a new one.
CREATE TABLE session_routes (
    tenant_id  uuid NOT NULL,
    agent_id   uuid NOT NULL,
    route_key  text NOT NULL,
    session_id uuid NOT NULL,
    PRIMARY KEY (tenant_id, agent_id, route_key),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE
);

-- Retention sweeps find old sessions by last activity.
CREATE INDEX sessions_by_activity ON sessions (updated_at);
