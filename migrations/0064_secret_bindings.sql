-- Team secrets an agent can use but never read (issue 39): a binding puts one of the team's
-- credential pools (`provider_credentials.provider`, the name `${NAME}` refers to) under an
-- environment variable name in the agent's sandboxes. There the variable holds a placeholder;
-- the egress proxy puts the pool's first key in its place only on connections to that key's
-- allowed hosts, and only where `placement` says. Re-runnable.
CREATE TABLE IF NOT EXISTS secret_bindings (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    agent_id   uuid NOT NULL,
    env_name   text NOT NULL CHECK (env_name ~ '^[A-Za-z_][A-Za-z0-9_]{0,127}$'),
    pool       text NOT NULL CHECK (length(pool) BETWEEN 1 AND 200),
    -- {"query": bool, "body_field": "...", "required_header": "..."}: hermes_secret_egress::Placement
    placement  jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, agent_id, env_name),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

ALTER TABLE secret_bindings ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_rows ON secret_bindings;
CREATE POLICY tenant_rows ON secret_bindings TO hermes_tenant
    USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant());
DROP POLICY IF EXISTS system_paths ON secret_bindings;
CREATE POLICY system_paths ON secret_bindings TO hermes_system USING (true) WITH CHECK (true);

-- The egress proxy's certificate authority, one for the installation: made by the first worker
-- that needs it, its key sealed with the master key, so every worker signs alike and sandboxes
-- trust one certificate. The installation's own row: no tenant reads it.
CREATE TABLE IF NOT EXISTS egress_authority (
    id         smallint PRIMARY KEY CHECK (id = 1),
    cert_pem   text NOT NULL,
    key_sealed bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON egress_authority FROM hermes_tenant;
