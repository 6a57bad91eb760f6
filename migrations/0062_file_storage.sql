-- The files people send, metered (issue 38): what each workspace's inbox holds, as sandboxd
-- measured it at the last delivery there (so files the agent deleted stop counting), and a
-- tenant's quota over their sum (`NULL`: the installation's `sandbox.file_storage_mb`; 0:
-- unlimited). Re-runnable: `Store::migrate` may apply it again over a ledger set back.
CREATE TABLE IF NOT EXISTS workspace_files (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    agent_id    uuid NOT NULL,
    workspace   text NOT NULL,
    inbox_bytes bigint NOT NULL CHECK (inbox_bytes >= 0),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, agent_id, workspace),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

ALTER TABLE workspace_files ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_rows ON workspace_files;
CREATE POLICY tenant_rows ON workspace_files TO hermes_tenant
    USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant());
DROP POLICY IF EXISTS system_paths ON workspace_files;
CREATE POLICY system_paths ON workspace_files TO hermes_system USING (true) WITH CHECK (true);

ALTER TABLE tenants ADD COLUMN IF NOT EXISTS file_storage_mb integer CHECK (file_storage_mb >= 0);
