#!/usr/bin/env bash
# Load test of the whole path (API -> RabbitMQ -> worker -> scripted model -> Postgres -> API)
# on this machine: a fresh database, two scripted models (one at 0 ms, one slow), `hermesd all`
# with the limits the load needs, then hermes-loadtest: plain, one-tool (Docker sandbox),
# streamed and continued turns, 16 and 64 clients, thousands of turns in flight. It prints
# each scenario's median and p99, the worker's split and the peak RSS. Any failed request
# fails the run.
#
# Figures are compared only with another build run in turn on the same machine (--against):
# absolute figures from another machine or day moved 30 to 74 % where paired runs of two
# commits agreed within a few percent.
#
# LOADTEST_SLOW_MS sets the slow model's latency (1,000 ms smoke, 10,000 ms release).
# LOADTEST_BIN names a directory of binaries built already (hermesd, hermesctl, hermes-sandboxd,
# hermes-loadtest, the testkit's): nothing is built.
# Usage: loadtest/run.sh [--smoke] [--trace grpc|http/protobuf] [--against REV [--rounds N]
#                        [--tolerance 0.05] [--fail-on-regression]] [hermes-loadtest flags]
#   --smoke     a short run on the dev build (seconds): what .ci/run does; checks only errors.
#   --split     the worker in a process of its own (`hermesd worker`, beside `hermesd api gateway
#               scheduler`), so its memory and split are the worker's alone: how the 10,000
#               waiting turns are measured (docs/PERFORMANCE.md). Not with the resume scenario.
#   --trace     export every span over OTLP to a local sink (hermes-otlp-sink), to measure what
#               tracing costs: compare with a run without it.
#   --against   build REV in a worktree too, run the two builds in turn N rounds (default 2,
#               ABBA order), and report every figure as this build's / REV's with the spread
#               over the pairs; a figure regresses when every pair puts it worse than the
#               tolerance (5 %). Both sides use this tree's load generator and scripted models:
#               only hermesd, hermesctl and hermes-sandboxd come from REV.
#   --write-figures FILE (a hermes-loadtest flag) keeps one run's figures for such a comparison.
set -euo pipefail
source "$(dirname "$0")/common.sh"

smoke=0 split=0 trace="" against="" rounds=2 tolerance=0.05 fail_on_regression=0
pass=()
while (($#)); do
  case "$1" in
    --smoke) smoke=1 ;;
    --split) split=1 ;;
    --trace) trace=${2:?--trace needs grpc or http/protobuf}; shift ;;
    --against) against=${2:?--against needs a commit}; shift ;;
    --rounds) rounds=${2:?--rounds needs a number}; shift ;;
    --tolerance) tolerance=${2:?--tolerance needs a fraction}; shift ;;
    --fail-on-regression) fail_on_regression=1 ;;
    *) pass+=("$1") ;;
  esac
  shift
done

if [[ -n "$against" ]]; then
  ((split)) && pass=(--split "${pass[@]}")
  exec loadtest/paired.sh "$against" "$rounds" "$tolerance" "$fail_on_regression" "$smoke" "${pass[@]}"
fi

deploy/dev/ensure-services.sh
if ((smoke)); then
  [[ -n ${LOADTEST_BIN:-} ]] ||
    cargo build --locked -p hermesd -p hermesctl -p hermes-sandboxd -p hermes-testkit -p hermes-loadtest --bins
  bin="${LOADTEST_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug}"
  slow_ms=${LOADTEST_SLOW_MS:-1000}
  flags=(--turns 20 --clients 16,64 --seconds 2 --history 20 --in-flight 200 --resume-runs 5 --warmup 5)
else
  [[ -n ${LOADTEST_BIN:-} ]] || cargo build --release --locked --bins
  bin="${LOADTEST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release}"
  slow_ms=${LOADTEST_SLOW_MS:-10000}
  flags=()
fi
HERMES_SANDBOXD_BIN="$bin/hermes-sandboxd" deploy/sandbox/build-test-image.sh >/dev/null
ulimit -n 65536 2>/dev/null || true

db=hermes_loadtest
psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" 2>/dev/null
# Postgres on the same machine: TLS adds nothing over loopback and cost 6 % of the turns a
# second (PGSSL=prefer measures it; a remote database should use require or verify-full).
export HERMES__DATABASE__URL="postgres://postgres@127.0.0.1:5432/$db?sslmode=${PGSSL:-disable}"
export HERMES__HTTP__BIND=127.0.0.1:18080
export HERMES__OPS__BIND=127.0.0.1:19090
export HERMES__GATEWAY__BIND=127.0.0.1:18081
# A fresh queue per run (it expires after the run), so runs are comparable.
export HERMES__RABBITMQ__PREFIX=hermes-loadtest-$$
export HERMES__RABBITMQ__QUEUE_EXPIRES_SECONDS=60
export HERMES__REDIS__KEY_PREFIX=hermes-loadtest-$$
export HERMES__SANDBOX__DOCKER__IMAGE=hermes-sandbox:test
export HERMES__TELEMETRY__LOG_FILTER=${HERMES__TELEMETRY__LOG_FILTER:-warn}
# The limits this load needs: one tenant and one key drive it all, so no per-key or per-tenant
# rate or turn limit, every worker slot for that tenant (fair shares are for many tenants),
# and slots for every turn the in-flight scenario holds open.
export HERMES__API__KEY_REQUESTS_PER_MINUTE=0
export HERMES__API__TENANT_REQUESTS_PER_MINUTE=0
export HERMES__API__KEY_CONCURRENT_TURNS=0
export HERMES__API__TENANT_CONCURRENT_TURNS=0
export HERMES__WORKER__TENANT_SHARE=1
export HERMES__WORKER__MAX_CONCURRENT_TURNS=${HERMES__WORKER__MAX_CONCURRENT_TURNS:-2100}

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  # A restarted hermesd is not this shell's child: wait for it to free its ports.
  for p in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
  # The run's tenant is gone with its database: so is any use for its sandbox containers.
  if [[ -n "${tenant:-}" ]] && command -v docker >/dev/null; then
    docker ps -aq --filter "label=io.hermes.tenant=$tenant" | xargs -r docker rm -f >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT INT TERM

"$bin/hermes-mock-llm" --bind 127.0.0.1:19999 --forget-requests 2>/dev/null &
pids+=($!)
"$bin/hermes-mock-llm" --bind 127.0.0.1:19998 --latency-ms "$slow_ms" --forget-requests 2>/dev/null &
pids+=($!)
"$bin/hermesd" migrate
tenant=$("$bin/hermesctl" tenant create load --json | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
"$bin/hermesctl" agent create --tenant load --name bench --model scripted --base-url http://127.0.0.1:19999/v1 >/dev/null
"$bin/hermesctl" agent create --tenant load --name bench-slow --model scripted --base-url http://127.0.0.1:19998/v1 >/dev/null
key=$("$bin/hermesctl" key create --tenant load --json | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')

if [[ -n "$trace" ]]; then
  sink_log=${TMPDIR:-/tmp}/hermes-loadtest-otlp-sink.log
  "$bin/hermes-otlp-sink" --grpc 127.0.0.1:14317 --http 127.0.0.1:14318 2>"$sink_log" &
  sink_pid=$!
  pids+=($sink_pid)
  export HERMES__TELEMETRY__OTLP_PROTOCOL=$trace
  if [[ "$trace" == grpc ]]; then
    export HERMES__TELEMETRY__OTLP_ENDPOINT=http://127.0.0.1:14317
  else
    export HERMES__TELEMETRY__OTLP_ENDPOINT=http://127.0.0.1:14318
  fi
  echo "tracing on: every span goes over OTLP ($trace) to hermes-otlp-sink (log: $sink_log)"
fi

log=${TMPDIR:-/tmp}/hermes-loadtest-hermesd.log
ops_url=http://127.0.0.1:19090
if ((split)); then
  "$bin/hermesd" api gateway scheduler >"$log" 2>&1 &
  pids+=($!)
  worker_log=${TMPDIR:-/tmp}/hermes-loadtest-worker.log
  HERMES__OPS__BIND=127.0.0.1:19091 "$bin/hermesd" worker >"$worker_log" 2>&1 &
  hermesd_pid=$!
  pids+=($hermesd_pid)
  for _ in $(seq 300); do curl -fs http://127.0.0.1:19091/readyz >/dev/null && break; sleep 0.1; done
  ops_url=http://127.0.0.1:19091
else
  "$bin/hermesd" all >"$log" 2>&1 &
  hermesd_pid=$!
  pids+=($hermesd_pid)
fi
for _ in $(seq 300); do curl -fs http://127.0.0.1:19090/readyz >/dev/null && break; sleep 0.1; done

status=0
# The resume scenario kills hermesd (SIGKILL) and starts it again; the new pid lands here.
pid_file=${TMPDIR:-/tmp}/hermes-loadtest-hermesd.$$.pid
restart=(--restart-bin "$bin/hermesd" --restart-log "$log" --restart-pid-file "$pid_file")
((split)) && restart=()
"$bin/hermes-loadtest" --url http://127.0.0.1:18080 --key "$key" --model bench --slow-model bench-slow \
  --ops-url "$ops_url" --pid "$hermesd_pid" "${restart[@]}" --slow-model-ms "$slow_ms" \
  "${flags[@]}" "${pass[@]}" || status=$?
if [[ -s "$pid_file" ]]; then
  hermesd_pid=$(cat "$pid_file")
  pids+=("$hermesd_pid")
  rm -f "$pid_file"
  echo "hermesd all was killed and restarted by the resume scenario (now pid $hermesd_pid; log: $log)"
else
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$hermesd_pid/status" 2>/dev/null || echo 0)
  if ((split)); then
    api_hwm=$(awk '/^VmHWM/ {print $2}' "/proc/${pids[-2]}/status" 2>/dev/null || echo 0)
    echo "hermesd worker: VmHWM $((hwm / 1024)) MiB (log: $worker_log); hermesd api gateway scheduler: VmHWM $((api_hwm / 1024)) MiB (log: $log)"
  else
    echo "hermesd all: VmHWM $((hwm / 1024)) MiB (log: $log)"
  fi
fi
if [[ -n "$trace" ]]; then
  # hermesd flushes its last spans when it stops; then the sink says what it got.
  kill -TERM "$hermesd_pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$hermesd_pid" 2>/dev/null || break; sleep 0.1; done
  kill -TERM "$sink_pid" 2>/dev/null || true
  wait "$sink_pid" 2>/dev/null || true
  spans=$(sed -n 's/.*: \([0-9]*\) spans in.*/\1/p' "$sink_log" | tail -1)
  echo "traces: ${spans:-0} spans exported to the sink"
  if [[ "${spans:-0}" -eq 0 ]]; then
    echo "tracing was on, yet no span reached the sink; its log:" >&2
    cat "$sink_log" >&2
    status=1
  fi
elif ! kill -0 "$hermesd_pid" 2>/dev/null; then
  echo "hermesd died during the run; its log:" >&2
  tail -50 "$log" >&2
  status=1
fi
exit "$status"
