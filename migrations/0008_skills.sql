-- Skills (agentskills.io SKILL.md folders). Three scopes, the narrower shadowing the wider by
-- name: bundled (tenant_id NULL, synced from the binary at start-up), tenant-wide (agent_id
-- NULL) and an agent's own (written by the agent with skill_manage).
CREATE TABLE skills (
    id           uuid PRIMARY KEY,
    tenant_id    uuid REFERENCES tenants (id) ON DELETE CASCADE,
    agent_id     uuid,
    name         text NOT NULL CHECK (name ~ '^[a-z0-9]+(-[a-z0-9]+)*$' AND length(name) <= 64),
    category     text NOT NULL,
    description  text NOT NULL,
    -- the whole SKILL.md, frontmatter included
    skill_md     text NOT NULL,
    -- the parsed frontmatter (conditions, config, ...), for filtering without re-parsing
    meta         jsonb NOT NULL,
    content_hash text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (tenant_id IS NOT NULL OR agent_id IS NULL),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX skills_bundled ON skills (name) WHERE tenant_id IS NULL;
CREATE UNIQUE INDEX skills_tenant ON skills (tenant_id, name) WHERE tenant_id IS NOT NULL AND agent_id IS NULL;
CREATE UNIQUE INDEX skills_agent ON skills (tenant_id, agent_id, name) WHERE agent_id IS NOT NULL;

-- references/, templates/, scripts/, assets/, examples/
CREATE TABLE skill_files (
    skill_id uuid NOT NULL REFERENCES skills (id) ON DELETE CASCADE,
    path     text NOT NULL,
    content  text NOT NULL,
    PRIMARY KEY (skill_id, path)
);

-- Per agent: how each visible skill is used, whether it is pinned, and the curator's verdict.
CREATE TABLE skill_usage (
    tenant_id        uuid NOT NULL,
    agent_id         uuid NOT NULL,
    name             text NOT NULL,
    view_count       bigint NOT NULL DEFAULT 0,
    use_count        bigint NOT NULL DEFAULT 0,
    last_used_at     timestamptz,
    pinned           boolean NOT NULL DEFAULT false,
    state            text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'stale', 'archived')),
    state_changed_at timestamptz,
    PRIMARY KEY (tenant_id, agent_id, name),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

-- Every change to an agent's skills (skill_manage, curator, review), for operators.
CREATE TABLE skill_events (
    id         bigserial PRIMARY KEY,
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    agent_id   uuid,
    name       text NOT NULL,
    action     text NOT NULL,
    actor      text NOT NULL,
    detail     jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX skill_events_by_agent ON skill_events (tenant_id, agent_id, created_at DESC);

-- Bumped by every change that alters what some agent's skills index shows; workers cache
-- indexes keyed by it. Scope: the tenant's id, or the nil id for the bundled catalogue.
CREATE TABLE skill_versions (
    scope   uuid PRIMARY KEY,
    version bigint NOT NULL DEFAULT 0
);

-- Skills an agent never sees, and when the curator last ran for it.
ALTER TABLE agents
    ADD COLUMN disabled_skills text[] NOT NULL DEFAULT '{}',
    ADD COLUMN curated_at timestamptz;
