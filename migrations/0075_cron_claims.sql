-- Cron claims at scale (issue 42, item 4): a claim finds the tenants with due jobs by skipping
-- through this index one tenant at a time, and takes each tenant's first due jobs from it, so
-- its cost follows tenants and the batch, not every due job (a burst of 100 K due jobs made
-- each claim rank all of them: 127 ms under the claim lock).
CREATE INDEX IF NOT EXISTS cron_jobs_due_by_tenant ON cron_jobs (tenant_id, next_run_at, id) WHERE state = 'scheduled';
