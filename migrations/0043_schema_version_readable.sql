-- Readiness compares the schema a database has with the one the running build needs
-- (`Store::schema_lag`), so a role started against an older schema (migrations run by a GitOps
-- job that has not finished, or not at all) stays unready instead of failing requests. The
-- system role may read the migrations ledger, never write it (0040 revoked everything).
DO $$
BEGIN
    IF to_regclass('_sqlx_migrations') IS NOT NULL THEN
        GRANT SELECT ON _sqlx_migrations TO hermes_system;
    END IF;
END $$;
