#!/usr/bin/env bash
# Bots per gateway pod on this machine (a benchmark, not a test): a scratch database with many
# Telegram bots bound to one tenant, long-polled by real `hermesd gateway` processes against
# the Telegram emulator. Prints when every bot was served, each pod's memory (per bot), sockets
# and CPU while the bots idle, pickup under a trickle of messages, and with --kill the takeover
# when the first of two pods is killed. LOADTEST_BIN names prebuilt release binaries.
#
# Usage: loadtest/gateway.sh [--bots N] [--pods P] [--seconds S] [--rate R] [--kill]
set -euo pipefail
source "$(dirname "$0")/common.sh"
deploy/dev/ensure-services.sh >/dev/null
[[ -n ${LOADTEST_BIN:-} ]] ||
  cargo build --release --locked -p hermesd -p hermesctl -p hermes-sandboxd -p hermes-testkit -p hermes-loadtest --bins
bin="${LOADTEST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release}"
# A socket a bot in each pod, and as many in the emulator.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
scratch_database hermes_gateway_bench
"$bin/hermes-gateway-bench" --database-url "$db_url" --hermesd "$bin/hermesd" "$@"
