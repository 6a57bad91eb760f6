-- Voice replies per chat (upstream's `/voice` modes, kept across restarts): `voice_only`
-- answers a voice note with a voice note too, `all` speaks every answer, `off` (no row) is
-- text only. Keyed by the chat's route, as `session_routes` is.
CREATE TABLE chat_voice_modes (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    agent_id   uuid NOT NULL,
    route_key  text NOT NULL,
    mode       text NOT NULL CHECK (mode IN ('voice_only', 'all')),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, agent_id, route_key),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

ALTER TABLE chat_voice_modes ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON chat_voice_modes TO hermes_tenant
    USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant());
CREATE POLICY system_paths ON chat_voice_modes TO hermes_system USING (true) WITH CHECK (true);
