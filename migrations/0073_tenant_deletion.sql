-- A tenant being deleted (issue 42): set when an operator asks, in the transaction that
-- removes every way into the tenant; the scheduler finishes a deletion a dead process left
-- half done. Re-runnable: `Store::migrate` may apply it again over a ledger set back.
ALTER TABLE tenants ADD COLUMN IF NOT EXISTS deleting_since timestamptz;
CREATE INDEX IF NOT EXISTS tenants_deleting ON tenants (deleting_since) WHERE deleting_since IS NOT NULL;

-- The audit log stays append-only: the one other way its entries go is with their tenant, and
-- only once that tenant's deletion has begun.
CREATE OR REPLACE FUNCTION hermes_forget_deleted_tenant_audit(tenant uuid, batch integer)
    RETURNS bigint
    LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        WITH gone AS (
            DELETE FROM audit_log WHERE id IN (
                SELECT a.id FROM audit_log a
                WHERE a.tenant_id = tenant
                  AND EXISTS (SELECT 1 FROM tenants t WHERE t.id = tenant AND t.deleting_since IS NOT NULL)
                  AND EXISTS (SELECT 1 FROM audit_log s WHERE s.tenant_id IS NULL
                              AND s.action = 'tenant.deletion_started' AND s.object_id = tenant::text)
                ORDER BY a.id LIMIT batch)
            RETURNING 1)
        SELECT count(*) FROM gone
    $$;
REVOKE ALL ON FUNCTION hermes_forget_deleted_tenant_audit(uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION hermes_forget_deleted_tenant_audit(uuid, integer) TO hermes_system;

-- The tenants deleted here, for the workers' sweep of what their sandboxes left, and the
-- deletions begun, for the function above.
CREATE INDEX IF NOT EXISTS audit_log_deleted_tenants ON audit_log (object_id)
    WHERE tenant_id IS NULL AND action IN ('tenant.deleted', 'tenant.deletion_started');

-- Only the system marks a tenant for deletion, and no one unmarks one: the mark lets its audit
-- entries go and sends the workers to remove its sandboxes.
CREATE OR REPLACE FUNCTION hermes_guard_deletion_mark() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
    AS $$
    BEGIN
        IF NEW.deleting_since IS DISTINCT FROM OLD.deleting_since THEN
            IF OLD.deleting_since IS NOT NULL THEN
                RAISE EXCEPTION 'a tenant''s deletion cannot be undone' USING ERRCODE = '42501';
            END IF;
            IF current_user = 'hermes_tenant' THEN
                RAISE EXCEPTION 'only the system marks a tenant for deletion' USING ERRCODE = '42501';
            END IF;
        END IF;
        RETURN NEW;
    END
    $$;
DROP TRIGGER IF EXISTS tenants_deletion_mark ON tenants;
CREATE TRIGGER tenants_deletion_mark BEFORE UPDATE OF deleting_since ON tenants
    FOR EACH ROW EXECUTE FUNCTION hermes_guard_deletion_mark();
