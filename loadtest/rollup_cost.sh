#!/usr/bin/env bash
# What the usage rollups (migration 0046) cost the write path: times recording model calls and
# ending turns with the rollup triggers on and off, on a scratch database with every
# migration applied (median of several runs of each).
#
# Usage: loadtest/rollup_cost.sh [turns per run, default 2000] [runs, default 5]
set -euo pipefail
cd "$(dirname "$0")/.."
turns=${1:-2000}
runs=${2:-5}
db=hermes_rollup_cost
psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
trap 'psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db"' EXIT
HERMES__DATABASE__URL="postgres://postgres@127.0.0.1:5432/$db" "${CARGO_TARGET_DIR:-target}/debug/hermesd" migrate >/dev/null
q() { psql -qtA -h 127.0.0.1 -U postgres -d "$db" -c "$1"; }
q "INSERT INTO tenants (id, name) VALUES ('00000000-0000-0000-0000-0000000000aa', 'bench')"
q "INSERT INTO agents (id, tenant_id, name, model, provider_base_url) VALUES
   ('00000000-0000-0000-0000-0000000000ab', '00000000-0000-0000-0000-0000000000aa', 'bot', 'm', 'http://x')"
q "INSERT INTO sessions (id, tenant_id, agent_id, source, user_key) VALUES
   ('00000000-0000-0000-0000-0000000000ac', '00000000-0000-0000-0000-0000000000aa',
    '00000000-0000-0000-0000-0000000000ab', 'api', 'u')"

# One turn as a worker writes it: the turn, two model calls in one statement, the end.
cat >/tmp/rollup_turn.sql <<'SQL'
BEGIN;
INSERT INTO turns (id, tenant_id, session_id, status, input) VALUES
  (gen_random_uuid(), '00000000-0000-0000-0000-0000000000aa', '00000000-0000-0000-0000-0000000000ac', 'running', '{}')
  RETURNING quote_literal(id) AS turn \gset
INSERT INTO model_calls (tenant_id, session_id, turn_id, purpose, provider, model, key_id,
                         prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens, latency_ms)
  SELECT '00000000-0000-0000-0000-0000000000aa', '00000000-0000-0000-0000-0000000000ac', :turn::uuid, c.*
  FROM unnest(ARRAY['main','main'], ARRAY['openai','openai'], ARRAY['gpt-a','gpt-a'], ARRAY[NULL,NULL]::text[],
              ARRAY[1200,1300]::bigint[], ARRAY[80,90]::bigint[], ARRAY[0,0]::bigint[], ARRAY[0,0]::bigint[],
              ARRAY[5,5]::bigint[]) AS c;
UPDATE turns SET status = 'completed', finished_at = now() WHERE id = :turn::uuid;
COMMIT;
SQL

measure() {
  pgbench -n -h 127.0.0.1 -U postgres -c 4 -j 2 -t $((turns / 4)) -f /tmp/rollup_turn.sql "$db" 2>/dev/null \
    | sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

on=(); off=()
for _ in $(seq "$runs"); do
  q "ALTER TABLE model_calls ENABLE TRIGGER model_calls_rolled_up; ALTER TABLE turns ENABLE TRIGGER turns_rolled_up"
  on+=("$(measure)")
  q "ALTER TABLE model_calls DISABLE TRIGGER model_calls_rolled_up; ALTER TABLE turns DISABLE TRIGGER turns_rolled_up"
  off+=("$(measure)")
done
on_m=$(printf '%s\n' "${on[@]}" | median)
off_m=$(printf '%s\n' "${off[@]}" | median)
echo "turn write (turn + 2 calls + end, 4 clients), median of $runs runs of $turns turns:"
echo "  rollups on:  ${on_m} ms   (runs: ${on[*]})"
echo "  rollups off: ${off_m} ms   (runs: ${off[*]})"
awk -v a="$on_m" -v b="$off_m" 'BEGIN { printf "  cost: %+.3f ms a turn (%+.1f %%)\n", a - b, (a - b) / b * 100 }'
echo "  rows kept: $(q "SELECT count(*) FROM usage_daily") (for $(q "SELECT count(*) FROM model_calls") calls)"
