#!/usr/bin/env bash
# Cron at scale on this machine (a benchmark, not a test): a scratch database with many tenants'
# jobs, all due in a window, claimed and started by several scheduler replicas at once while a
# stand-in worker ends each run's turn. Then the ledger is read: each slot run exactly once, one
# turn per run, and lateness (turn created less the slot) p50/p99/max. Exits 1 when a slot ran
# twice or not at all. The database and the bench's queues are dropped at the end.
#
# Usage: loadtest/cron.sh [--tenants T] [--jobs J per tenant] [--schedulers S] [--spread-secs W]
#                         [--turn-ms D] [--max-parallel N] [--per-tenant N]
set -euo pipefail
source "$(dirname "$0")/common.sh"
deploy/dev/ensure-services.sh >/dev/null
cargo build --release --locked -p hermes-loadtest --bin hermes-cron-bench
scratch_database hermes_cron_bench
# Autovacuum may be off on a dev or CI Postgres (it is on this machine kind); a run updates every
# job and ends a turn a run, so the hot tables are vacuumed every 30 s, as autovacuum would.
if [[ $(psql -h 127.0.0.1 -U postgres -d postgres -Atc "SHOW autovacuum") == off ]]; then
  echo "autovacuum is off: vacuuming the cron tables every 30 s instead"
  (while sleep 30; do
     psql -h 127.0.0.1 -U postgres -d "$db" -qc "VACUUM (ANALYZE) cron_jobs, cron_runs, turns, sessions" 2>/dev/null || exit 0
   done) &
  vacuum=$!
  trap 'kill $vacuum 2>/dev/null; drop_scratch_database' EXIT
fi
"${CARGO_TARGET_DIR:-$root/target}/release/hermes-cron-bench" \
  --database-url "$db_url" "$@"
ledger=$(psql -h 127.0.0.1 -U postgres -d "$db" -v ON_ERROR_STOP=1 -At <<'SQL'
SELECT format('runs %s, slots %s, jobs %s, turns %s, completed %s', count(*), count(DISTINCT (r.job_id, r.scheduled_for)),
              (SELECT count(*) FROM cron_jobs), (SELECT count(*) FROM turns), count(*) FILTER (WHERE r.status = 'completed'))
FROM cron_runs r;
SELECT format('lateness (turn queued less its slot): p50 %s ms, p99 %s ms, max %s ms',
              round(percentile_cont(0.5) WITHIN GROUP (ORDER BY late)), round(percentile_cont(0.99) WITHIN GROUP (ORDER BY late)),
              round(max(late)))
FROM (SELECT extract(epoch FROM t.created_at - r.scheduled_for) * 1000 AS late
      FROM cron_runs r JOIN turns t ON t.id = r.turn_id) l;
SELECT CASE WHEN count(*) = (SELECT count(*) FROM cron_jobs)
             AND count(DISTINCT r.job_id) = count(*)
             AND (SELECT count(*) FROM turns) = count(*)
            THEN 'exactly once' ELSE 'NOT exactly once' END
FROM cron_runs r;
SQL
)
echo "$ledger"
grep -qx 'exactly once' <<<"$ledger"
