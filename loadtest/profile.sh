#!/usr/bin/env bash
# Where the CPU goes under load. Runs the 16-client phase of loadtest/run.sh (release build),
# records every process with `perf record -a -g` for 10 s in the middle of it, and prints each
# process's share of the samples and hermesd's hottest functions. With inferno installed
# (`cargo install inferno`) it also writes a flame graph of hermesd. Needs perf and root (or
# kernel.perf_event_paranoid <= 0).
#
# Usage: loadtest/profile.sh [hermes-loadtest flags]
#   PROFILE_DIR  where perf.data and flamegraph.svg go (default target/profile)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${PROFILE_DIR:-target/profile}
mkdir -p "$out"
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)" >&2; exit 2; }

if pgrep -x hermesd >/dev/null; then
  echo "a hermesd is running already; stop it first (this script profiles the one it starts)" >&2
  exit 2
fi
log="$out/run.log"
loadtest/run.sh --scenarios clients --clients 16 --seconds 30 "$@" >"$log" 2>&1 &
run=$!
for _ in $(seq 600); do pgrep -f "hermes-loadtest --url" >/dev/null && break; sleep 1; done
sleep 8
pid=$(pgrep -x hermesd | head -1)
perf record -a -g -F 499 -o "$out/perf.data" -- sleep 10 2>/dev/null
status=0
wait "$run" || status=$?
grep -E "^clients" "$log" || { tail -20 "$log" >&2; exit "$status"; }

echo
echo "share of the samples, per process name (tokio-rt-worker and lapin-io-loop are hermesd):"
perf report -i "$out/perf.data" --sort comm --stdio --no-children -g none 2>/dev/null | grep '%' | head -12 || true
echo
echo "hermesd's hottest functions (self time):"
perf report -i "$out/perf.data" --pid "$pid" --sort dso,sym --stdio --no-children -g none 2>/dev/null |
  grep '%' | head -25 | cut -c1-140 || true
if command -v inferno-collapse-perf >/dev/null && command -v inferno-flamegraph >/dev/null; then
  perf script -i "$out/perf.data" --pid "$pid" 2>/dev/null | inferno-collapse-perf >"$out/hermesd.folded"
  inferno-flamegraph --title "hermesd all, 16 clients" <"$out/hermesd.folded" >"$out/flamegraph.svg"
  echo
  echo "flame graph of hermesd: $out/flamegraph.svg"
fi
exit "$status"
