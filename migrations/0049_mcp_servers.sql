-- The MCP servers an agent uses, in upstream Hermes's `mcp_servers` shape (`spec`, with every
-- `env` and `headers` value masked) and the values themselves sealed with the master key
-- (`secrets`: a JSON object {"env": {...}, "headers": {...}}, the row named in the sealing).
CREATE TABLE mcp_servers (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    agent_id   uuid NOT NULL,
    name       text NOT NULL CHECK (name ~ '^[A-Za-z0-9_-]{1,40}$'),
    spec       jsonb NOT NULL,
    secrets    bytea,
    enabled    boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, agent_id, name),
    -- Another tenant's agent cannot be named: the pair must be an agent of this tenant.
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

ALTER TABLE mcp_servers ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON mcp_servers TO hermes_tenant
    USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant());
CREATE POLICY system_paths ON mcp_servers TO hermes_system USING (true) WITH CHECK (true);
