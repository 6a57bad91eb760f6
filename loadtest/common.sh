# shellcheck shell=bash
# The start the load-test scripts share (run.sh, sandbox.sh and search.sh source it): work from
# the repository root, where their paths are written from, on the toolchain rust-toolchain.toml
# pins. Sets root to that folder, whose target/ holds the builds unless CARGO_TARGET_DIR says.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
source deploy/dev/toolchain.sh
ensure_pinned_toolchain
