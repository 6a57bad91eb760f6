#!/usr/bin/env bash
# History at scale on this machine (a benchmark, not a test): a scratch database with many
# tenants' conversations written through the real store, then session_search, the session list
# and the usage report timed against random tenants and users, and one large user's history on
# its own; then the bytes on disk per message. The database is dropped at the end unless
# --keep is given first (to study plans with psql; its name is printed).
#
# Usage: loadtest/search.sh [--keep] [--tenants T] [--sessions N per tenant] [--messages M]
#                           [--users U] [--calls C] [--large L] [--samples S]
set -euo pipefail
source "$(dirname "$0")/common.sh"
keep=0
if [[ ${1:-} == --keep ]]; then keep=1; shift; fi
deploy/dev/ensure-services.sh >/dev/null
cargo build --release --locked -p hermes-loadtest --bin hermes-search-bench
scratch_database hermes_search_bench
"${CARGO_TARGET_DIR:-$root/target}/release/hermes-search-bench" \
  --database-url "$db_url" "$@"
psql -h 127.0.0.1 -U postgres -d "$db" -qc "VACUUM ANALYZE"
echo
psql -h 127.0.0.1 -U postgres -d "$db" -P footer=off <<'SQL'
SELECT relname AS "table", n_live_tup AS "rows",
       pg_size_pretty(pg_table_size(relid)) AS "heap+toast",
       pg_size_pretty(pg_indexes_size(relid)) AS "indexes",
       round(pg_total_relation_size(relid)::numeric / greatest(n_live_tup, 1)) AS "bytes a row, all in"
FROM pg_stat_user_tables WHERE relname IN ('messages', 'sessions', 'turns', 'model_calls', 'usage_daily')
ORDER BY pg_total_relation_size(relid) DESC;
SELECT indexrelname AS "index on messages", pg_size_pretty(pg_relation_size(indexrelid)) AS size
FROM pg_stat_user_indexes WHERE relname = 'messages' ORDER BY pg_relation_size(indexrelid) DESC;
SQL
