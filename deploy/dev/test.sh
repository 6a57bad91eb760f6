#!/usr/bin/env bash
# The whole test suite, as CI runs it: make sure Postgres, Redis, RabbitMQ and Docker are up
# (installing them when missing), build the offline sandbox test image, then check formatting,
# lint with warnings as errors, and run every test.
#
# Usage: deploy/dev/test.sh [extra cargo-nextest/cargo-test arguments]
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/dev/toolchain.sh
ensure_pinned_toolchain

deploy/dev/ensure-services.sh
# The official Kubernetes schemas, to validate generated manifests offline.
if ! python3 -c 'import kubernetes_validate' >/dev/null 2>&1; then
  echo "== installing kubernetes-validate (PyPI)"
  python3 -m pip install --quiet --disable-pip-version-check kubernetes-validate==1.37.0
fi
echo "== sandboxd and the sandbox test image"
cargo build -p hermes-sandboxd --locked
deploy/sandbox/build-test-image.sh >/dev/null

echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== tests"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast "$@"
else
  cargo test --workspace --locked --no-fail-fast "$@"
fi
