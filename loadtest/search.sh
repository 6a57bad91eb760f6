#!/usr/bin/env bash
# session_search latency on this machine (a benchmark, not a test): a scratch database with
# many conversations written through the real store, then each query shape timed. The database
# is dropped at the end.
#
# Usage: loadtest/search.sh [--sessions N] [--messages M] [--runs R]
set -euo pipefail
source "$(dirname "$0")/common.sh"
deploy/dev/ensure-services.sh >/dev/null
cargo build --release --locked -p hermes-loadtest --bin hermes-search-bench
db="hermes_search_bench_$$"
psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE $db"
trap 'psql -h 127.0.0.1 -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
"${CARGO_TARGET_DIR:-$root/target}/release/hermes-search-bench" \
  --database-url "postgres://postgres@127.0.0.1:5432/$db" "$@"
