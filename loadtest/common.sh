# shellcheck shell=bash
# The start the load-test scripts share (run.sh, sandbox.sh and search.sh source it): work from
# the repository root, where their paths are written from, on the toolchain rust-toolchain.toml
# pins. Sets root to that folder, whose target/ holds the builds unless CARGO_TARGET_DIR says.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
source deploy/dev/toolchain.sh
ensure_pinned_toolchain

# A scratch database for one benchmark run (tenant.sh, search.sh, cron.sh): sets db and db_url,
# and drops it when the script exits unless keep=1.
scratch_database() {
  db="$1_$$"
  db_url="postgres://postgres@127.0.0.1:5432/$db"
  psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE $db"
  if [[ ${keep:-0} == 1 ]]; then
    echo "keeping the database $db"
  else
    trap drop_scratch_database EXIT
  fi
}

drop_scratch_database() {
  psql -h 127.0.0.1 -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"
}
