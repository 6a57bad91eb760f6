-- The second wall, tightened (issue 35, security review 2026-12, L2, L9, L10).

-- Shared rows (bundled skills, their files, the bundled catalogue's index version) are read by
-- every tenant and changed by none: the tenant role's policy for every command covers its own
-- rows only, and a second policy, for reading alone, adds the shared ones. Before, one policy
-- for every command let a tenant delete or claim a bundled skill when a filter was forgotten.
DROP POLICY tenant_rows ON skills;
CREATE POLICY tenant_rows ON skills TO hermes_tenant
    USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant());
CREATE POLICY shared_reads ON skills FOR SELECT TO hermes_tenant USING (tenant_id IS NULL);

DROP POLICY tenant_rows ON skill_files;
CREATE POLICY tenant_rows ON skill_files TO hermes_tenant
    USING (EXISTS (SELECT 1 FROM skills s WHERE s.id = skill_id AND s.tenant_id = hermes_tenant()))
    WITH CHECK (EXISTS (SELECT 1 FROM skills s WHERE s.id = skill_id AND s.tenant_id = hermes_tenant()));
CREATE POLICY shared_reads ON skill_files FOR SELECT TO hermes_tenant
    USING (EXISTS (SELECT 1 FROM skills s WHERE s.id = skill_id AND s.tenant_id IS NULL));

DROP POLICY tenant_rows ON skill_versions;
CREATE POLICY tenant_rows ON skill_versions TO hermes_tenant
    USING (scope = hermes_tenant()) WITH CHECK (scope = hermes_tenant());
CREATE POLICY shared_reads ON skill_versions FOR SELECT TO hermes_tenant
    USING (scope = '00000000-0000-0000-0000-000000000000');

-- A tenant sees its members' names and standing, never their password hashes or lockouts.
REVOKE SELECT ON people FROM hermes_tenant;
GRANT SELECT (id, email, display_name, operator, has_password, email_proven, operator_sso, disabled_at, created_at)
    ON people TO hermes_tenant;

-- Who made a token: a service token an admin made is revoked when they leave the tenant (they
-- saw its secret).
ALTER TABLE admin_tokens ADD COLUMN made_by uuid REFERENCES people (id) ON DELETE SET NULL;

-- Retention keeps at least a day, whatever the caller asks: the floor is the database's, not
-- only the scheduler's.
CREATE OR REPLACE FUNCTION hermes_prune_audit(keep interval, batch integer)
    RETURNS bigint
    LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        WITH gone AS (
            DELETE FROM audit_log WHERE id IN (
                SELECT id FROM audit_log WHERE at < now() - GREATEST(keep, interval '1 day')
                ORDER BY id LIMIT batch)
            RETURNING 1)
        SELECT count(*) FROM gone
    $$;
