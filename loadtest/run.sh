#!/usr/bin/env bash
# Load test of the whole path (API -> RabbitMQ -> worker -> scripted model -> Postgres -> API)
# on this machine: release build, a fresh database, the scripted model at 0 ms, `hermesd all`,
# then hermes-loadtest (sequential, then N concurrent clients) while sampling hermesd's RSS.
#
# Usage: loadtest/run.sh [--concurrency N] [--seconds S] [--sequential N]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
source deploy/dev/toolchain.sh
ensure_pinned_toolchain
deploy/dev/ensure-services.sh
cargo build --release --locked --bins
bin="${CARGO_TARGET_DIR:-$root/target}/release"
HERMES_SANDBOXD_BIN="$bin/hermes-sandboxd" deploy/sandbox/build-test-image.sh >/dev/null

db=hermes_loadtest
psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
export HERMES__DATABASE__URL="postgres://postgres@127.0.0.1:5432/$db${PGSSL:+?sslmode=$PGSSL}"
export HERMES__HTTP__BIND=127.0.0.1:18080
export HERMES__OPS__BIND=127.0.0.1:19090
export HERMES__GATEWAY__BIND=127.0.0.1:18081
# A fresh queue per run (it expires after the run), so runs are comparable.
export HERMES__RABBITMQ__PREFIX=hermes-loadtest-$$
export HERMES__RABBITMQ__QUEUE_EXPIRES_SECONDS=60
export HERMES__REDIS__KEY_PREFIX=hermes-loadtest
export HERMES__SANDBOX__DOCKER__IMAGE=hermes-sandbox:test
export HERMES__TELEMETRY__LOG_FILTER=${HERMES__TELEMETRY__LOG_FILTER:-warn}
# One tenant drives all the load here: let it use every slot (fair shares are for many tenants).
export HERMES__WORKER__TENANT_SHARE=1

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

"$bin/hermes-mock-llm" --bind 127.0.0.1:19999 2>/dev/null &
pids+=($!)
"$bin/hermesd" migrate
"$bin/hermesctl" tenant create load >/dev/null
"$bin/hermesctl" agent create --tenant load --name bench --model scripted --base-url http://127.0.0.1:19999/v1 >/dev/null
key=$("$bin/hermesctl" key create --tenant load --json | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')

"$bin/hermesd" all >/tmp/hermes-loadtest-hermesd.log 2>&1 &
hermesd_pid=$!
pids+=($hermesd_pid)
for _ in $(seq 100); do curl -fs http://127.0.0.1:19090/readyz >/dev/null && break; sleep 0.1; done

peak=0
( while kill -0 "$hermesd_pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$hermesd_pid/status" 2>/dev/null || echo 0)
    echo "$rss"; sleep 0.2
  done ) >/tmp/hermes-loadtest-rss.txt &
pids+=($!)

"$bin/hermes-loadtest" --url http://127.0.0.1:18080 --key "$key" --model bench "$@"
# The worker's own view: a turn's time in the worker against the model call's (medians over
# the recent window), so the orchestration overhead shows without the HTTP and queue hops.
curl -fs http://127.0.0.1:19090/metrics | awk '
  /^hermes_turn_seconds\{.*status="completed".*quantile="0.5"\}/ { turn = $2 }
  /^hermes_llm_call_seconds\{.*outcome="ok".*quantile="0.5"\}/ { call = $2 }
  END { if (turn != "") printf "worker: turn median %.2f ms, model call median %.2f ms\n", turn * 1000, call * 1000 }'
peak=$(sort -n /tmp/hermes-loadtest-rss.txt | tail -1)
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$hermesd_pid/status")
echo "hermesd all: RSS peak sampled ${peak} KiB ($((peak / 1024)) MiB), VmHWM $((hwm / 1024)) MiB"
