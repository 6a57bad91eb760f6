#!/usr/bin/env bash
# Builds the cargo-fuzz targets in fuzz/ and runs each for a while (libFuzzer), starting from
# the committed seeds in fuzz/seeds/<target>/. Any crash fails the run and leaves the input in
# fuzz/artifacts/<target>/ (reproduce with: cargo fuzz run <target> <file>).
#
# Usage: deploy/dev/fuzz.sh [--seconds N] [target ...]
#   --seconds N   time per target (default 10; the test suite uses that, run longer by hand)
#
# libFuzzer's instrumentation needs nightly compiler flags; the machine's stable toolchain
# accepts them with RUSTC_BOOTSTRAP=1 (no other toolchain can be fetched here).
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=10
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds=$2; shift ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) targets+=("$1") ;;
  esac
  shift
done

CARGO_FUZZ_VERSION=0.13.2
if [[ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]]; then
  echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION (crates.io)"
  cargo install --quiet --locked cargo-fuzz --version "$CARGO_FUZZ_VERSION"
fi
export RUSTC_BOOTSTRAP=1
# A target directory of its own (instrumented builds share nothing with the workspace's),
# outside the clone when the machine keeps one.
if [[ -z "${CARGO_TARGET_DIR:-}" || "$CARGO_TARGET_DIR" != *fuzz* ]]; then
  if [[ -d /var/cache && -w /var/cache ]]; then
    export CARGO_TARGET_DIR=/var/cache/hermes-fuzz-target
  else
    export CARGO_TARGET_DIR="$PWD/fuzz/target"
  fi
fi
cd fuzz
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(cargo fuzz list)
fi
echo "== fuzz: building ${targets[*]}"
cargo fuzz build --dev --sanitizer none >/dev/null
for target in "${targets[@]}"; do
  corpus="$(mktemp -d)"
  seeds="seeds/$target"
  mkdir -p "artifacts/$target"
  log="$corpus.log"
  # Every run starts from the seeds; what it finds stays in its temporary corpus.
  set +e
  cargo fuzz run --dev --sanitizer none "$target" "$corpus" "$seeds" -- \
    -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="artifacts/$target/" >"$log" 2>&1
  status=$?
  set -e
  grep -E "^stat::(number_of_executed_units|new_units_added)|panicked|ERROR|SUMMARY" "$log" | sed "s/^/   $target: /" || true
  ((status == 0)) || tail -n 30 "$log" >&2
  rm -rf "$corpus" "$log"
  if ((status != 0)); then
    echo "fuzz: $target failed; the input is in fuzz/artifacts/$target/" >&2
    exit 1
  fi
done
echo "== fuzz: ${#targets[@]} targets, ${seconds}s each, no failure"
