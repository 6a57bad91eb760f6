#!/usr/bin/env bash
# A tenant's export and deletion at size on this machine (a benchmark, not a test): a scratch
# database with one tenant of many conversations and a smaller one beside it, written through
# the real store; then the export and the deletion timed, with the other tenant's enqueues timed
# before and during it. The database is dropped at the end.
#
# Usage: loadtest/tenant.sh [--sessions N] [--messages M]
set -euo pipefail
source "$(dirname "$0")/common.sh"
deploy/dev/ensure-services.sh >/dev/null
cargo build --release --locked -p hermes-loadtest --bin hermes-tenant-bench
scratch_database hermes_tenant_bench
"${CARGO_TARGET_DIR:-$root/target}/release/hermes-tenant-bench" \
  --database-url "$db_url" "$@"
