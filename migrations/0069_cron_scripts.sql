-- Upstream's script jobs (issue 41): a script in the agent's scripts folder runs in its
-- sandbox before each run; `no_agent` delivers the script's output with no model at all;
-- `context_from` prepends the latest output of other jobs of the same agent; `workdir` is
-- where the script starts. Written to apply again over itself (see contracts/schema.rs).
ALTER TABLE cron_jobs
    ADD COLUMN IF NOT EXISTS script       text CHECK (script IS NULL OR length(script) BETWEEN 1 AND 200),
    ADD COLUMN IF NOT EXISTS no_agent     boolean NOT NULL DEFAULT false,
    ADD COLUMN IF NOT EXISTS context_from uuid[] NOT NULL DEFAULT '{}' CHECK (cardinality(context_from) <= 10),
    ADD COLUMN IF NOT EXISTS workdir      text CHECK (workdir IS NULL OR length(workdir) BETWEEN 1 AND 500);
ALTER TABLE cron_jobs DROP CONSTRAINT IF EXISTS cron_jobs_no_agent_runs_a_script;
ALTER TABLE cron_jobs ADD CONSTRAINT cron_jobs_no_agent_runs_a_script CHECK (NOT no_agent OR script IS NOT NULL);
