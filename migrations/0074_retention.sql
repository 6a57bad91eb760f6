-- How long a tenant's data is kept (issue 42): finished turns (with what hangs off them), the
-- files turns were given, and usage detail, each in days. NULL is the installation's period
-- (`retention.*` in the configuration), 0 keeps forever; usage detail is kept at least 35 days
-- (the month's caps read it). `session_retention_days` (0007) now means the same, NULL being
-- the installation's `retention.sessions_days`; but its "forever" is stored as 36500 days, not
-- 0: the previous release's scheduler, running beside this one during an upgrade, would read
-- 0 as "delete every idle session". Re-runnable.
ALTER TABLE tenants ADD COLUMN IF NOT EXISTS turn_retention_days integer CHECK (turn_retention_days >= 0);
ALTER TABLE tenants ADD COLUMN IF NOT EXISTS file_retention_days integer CHECK (file_retention_days >= 0);
ALTER TABLE tenants ADD COLUMN IF NOT EXISTS usage_detail_retention_days integer
    CHECK (usage_detail_retention_days = 0 OR usage_detail_retention_days >= 35);

-- The sweep's reads: a tenant's finished turns and its files, oldest first.
CREATE INDEX IF NOT EXISTS turns_finished ON turns (tenant_id, finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS turn_files_by_age ON turn_files (tenant_id, created_at);
-- Deleting a session (retention, `DELETE /api/sessions/{id}`, a tenant's deletion) finds its
-- turns through the foreign key; the only index by session covered open turns, so each deleted
-- session read every turn of the table (1,000 sessions took 9 s beside 110 K turns).
CREATE INDEX IF NOT EXISTS turns_by_session ON turns (tenant_id, session_id);
