#!/usr/bin/env bash
# `loadtest/run.sh --against REV` (see there): builds this tree as it is and REV in a worktree,
# runs loadtest/run.sh on each in turn for N rounds in ABBA order (REV, this; this, REV; ...)
# so drift over the run falls on both, and compares the figures pair by pair
# (`hermes-loadtest --base ... --head ...`). Both sides run this tree's load generator and
# scripted models; only hermesd, hermesctl and hermes-sandboxd are REV's.
# Usage: loadtest/paired.sh REV ROUNDS TOLERANCE FAIL(0|1) SMOKE(0|1) [hermes-loadtest flags]
set -euo pipefail
source "$(dirname "$0")/common.sh"
against=$1 rounds=$2 tolerance=$3 fail=$4 smoke=$5
shift 5

# What "this build" is, told before building (the tree may change while REV builds).
this="$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ', with uncommitted changes')"
work=$(mktemp -d "${TMPDIR:-/tmp}/hermes-paired.XXXXXX")
tree="$work/tree"
git worktree add --detach "$tree" "$against" >/dev/null
cleanup() { git worktree remove --force "$tree" 2>/dev/null || true; }
trap cleanup EXIT

profile=release flag=(--release) run_flags=()
if ((smoke)); then
  profile=debug flag=() run_flags=(--smoke)
fi
target=${CARGO_TARGET_DIR:-$root/target}
# REV builds in a target directory of its own: cargo names a workspace's artifacts by paths
# relative to it and trusts file times, so two checkouts sharing one would take each other's
# stale artifacts for fresh (seen: generated protocol code of the other tree).
other_target="$target/paired-rev"
mkdir -p "$work/this" "$work/other"
cargo build --locked "${flag[@]}" -p hermesd -p hermesctl -p hermes-sandboxd -p hermes-testkit -p hermes-loadtest --bins
cp "$target/$profile"/{hermesd,hermesctl,hermes-sandboxd,hermes-loadtest,hermes-mock-llm,hermes-otlp-sink} "$work/this/"
cp "$work/this"/{hermes-loadtest,hermes-mock-llm,hermes-otlp-sink} "$work/other/"
(cd "$tree" && CARGO_TARGET_DIR="$other_target" cargo build --locked "${flag[@]}" -p hermesd -p hermesctl -p hermes-sandboxd --bins)
cp "$other_target/$profile"/{hermesd,hermesctl,hermes-sandboxd} "$work/other/"
echo "paired: this tree ($this) against $against, $rounds round(s)"

base=() head=()
for ((r = 1; r <= rounds; r++)); do
  order=(other this)
  ((r % 2 == 0)) && order=(this other)
  for side in "${order[@]}"; do
    echo "== round $r of $rounds: $side build =="
    LOADTEST_BIN="$work/$side" loadtest/run.sh "${run_flags[@]}" "$@" --write-figures "$work/$side-$r.json"
  done
  base+=("$work/other-$r.json")
  head+=("$work/this-$r.json")
done
compare=(--base "$(IFS=,; echo "${base[*]}")" --head "$(IFS=,; echo "${head[*]}")" --tolerance "$tolerance")
((fail)) && compare+=(--fail-on-regression)
echo "figures kept in $work"
"$work/this/hermes-loadtest" "${compare[@]}"
