#!/usr/bin/env bash
# Sandbox latency on this machine, per backend (a benchmark, not a test): cold create, attach
# from another worker, exec and read round trips. Release build; the offline test image for
# Docker; sandboxd from the same build for bubblewrap.
#
# Usage: loadtest/sandbox.sh [--sandboxes N] [--execs M]
set -euo pipefail
source "$(dirname "$0")/common.sh"
deploy/dev/ensure-services.sh >/dev/null
cargo build --release --locked -p hermes-sandboxd -p hermes-loadtest
bin="${CARGO_TARGET_DIR:-$root/target}/release"
HERMES_SANDBOXD_BIN="$bin/hermes-sandboxd" deploy/sandbox/build-test-image.sh >/dev/null
"$bin/hermes-sandbox-bench" --backend docker --image hermes-sandbox:test "$@"
"$bin/hermes-sandbox-bench" --backend local --sandboxd "$bin/hermes-sandboxd" "$@"
