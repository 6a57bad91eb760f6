-- Per-person workspaces (issue 38): an agent's `workspace` setting says whose sandbox its
-- tools use: one for everyone (`agent`, what every agent had so far and keeps), one per end
-- user (`person`, what new agents get from the API, hermesctl and the console) or one per
-- conversation (`session`). A session's `workspace_root` is the session its conversation began
-- with: sub-agents, forks and compacted continuations keep their parent's workspace.
ALTER TABLE agents ADD COLUMN IF NOT EXISTS workspace text NOT NULL DEFAULT 'agent'
    CHECK (workspace IN ('agent', 'person', 'session'));
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS workspace_root uuid;
