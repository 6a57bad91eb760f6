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
                ORDER BY a.id LIMIT batch)
            RETURNING 1)
        SELECT count(*) FROM gone
    $$;
REVOKE ALL ON FUNCTION hermes_forget_deleted_tenant_audit(uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION hermes_forget_deleted_tenant_audit(uuid, integer) TO hermes_system;

-- The tenants deleted here, for the workers' sweep of what their sandboxes left.
CREATE INDEX IF NOT EXISTS audit_log_deleted_tenants ON audit_log (object_id)
    WHERE tenant_id IS NULL AND action = 'tenant.deleted';
