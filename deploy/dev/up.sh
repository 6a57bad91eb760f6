#!/usr/bin/env bash
# Bring up the whole of Hermes Cloud on this machine: Postgres, Redis, RabbitMQ and Docker
# (installed from the OS packages when missing), the sandbox image, a release build, the
# schema, a demo tenant with an agent and an API key, then `hermesd all` in the foreground.
#
# The demo agent uses OPENAI_BASE_URL / OPENAI_API_KEY / HERMES_MODEL when set (any
# OpenAI-compatible provider); otherwise a local scripted model that echoes and runs
# "$ <command>" messages in the sandbox.
#
# Usage: deploy/dev/up.sh        (Ctrl-C stops everything)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
source deploy/dev/toolchain.sh
ensure_pinned_toolchain

state="$root/.hermes"
mkdir -p "$state"
api_port=${HERMES_PORT:-8080}

echo "== services"
deploy/dev/ensure-services.sh
echo "== release build (first build takes several minutes on 2 cores)"
cargo build --release --locked --bins
bin="${CARGO_TARGET_DIR:-$root/target}/release"

echo "== sandbox image with sandboxd (first build takes about a minute)"
HERMES_SANDBOXD_BIN="$bin/hermes-sandboxd" deploy/sandbox/build-image.sh >/dev/null

# Tenant secrets are encrypted with this key; keep it (losing it loses stored provider keys).
if [[ ! -s "$state/master.key" ]]; then
  (umask 077 && head -c 32 /dev/urandom | base64 >"$state/master.key")
fi
export HERMES__SECRETS__MASTER_KEY="$(cat "$state/master.key")"
# Loopback: TLS would add nothing but CPU (docs/PERFORMANCE.md).
export HERMES__DATABASE__URL="${HERMES__DATABASE__URL:-postgres://postgres@127.0.0.1:5432/hermes?sslmode=disable}"
export HERMES__HTTP__BIND="127.0.0.1:${api_port}"
export HERMES__SANDBOX__DOCKER__IMAGE="${HERMES__SANDBOX__DOCKER__IMAGE:-hermes-sandbox:latest}"
export HERMES__TELEMETRY__LOG_FORMAT="${HERMES__TELEMETRY__LOG_FORMAT:-text}"

db=${HERMES__DATABASE__URL##*/}
db=${db%%\?*}
if ! psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
  psql -q -h 127.0.0.1 -U postgres -d postgres -c "CREATE DATABASE \"$db\""
fi
"$bin/hermesd" migrate

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM

if [[ -n "${OPENAI_BASE_URL:-}" || -n "${OPENAI_API_KEY:-}" ]]; then
  base_url=${OPENAI_BASE_URL:-https://api.openai.com/v1}
  model=${HERMES_MODEL:-gpt-4o-mini}
  key_args=()
  [[ -n "${OPENAI_API_KEY:-}" ]] && key_args=(--api-key-env OPENAI_API_KEY)
  echo "== provider: $base_url, model $model"
else
  base_url="http://127.0.0.1:9999/v1"
  model=scripted
  key_args=()
  "$bin/hermes-mock-llm" --bind 127.0.0.1:9999 &
  pids+=($!)
  echo "== provider: local scripted model (set OPENAI_BASE_URL/OPENAI_API_KEY/HERMES_MODEL for a real one)"
fi

"$bin/hermesctl" tenant create demo >/dev/null 2>&1 || true
agent_name="hermes"
if "$bin/hermesctl" agent list --tenant demo --json | grep -q "\"name\":\"$agent_name\""; then
  # Re-running with another provider: give the agent a fresh name so both stay usable.
  agent_name="hermes-$(date +%s)"
fi
"$bin/hermesctl" agent create --tenant demo --name "$agent_name" --model "$model" --base-url "$base_url" "${key_args[@]}" >/dev/null
key=$("$bin/hermesctl" key create --tenant demo --name up.sh --json | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
# The demo tenant's owner, and a one-time link that signs them in to the console.
owner_email=${HERMES_DEMO_OWNER:-owner@demo.local}
console_link=$("$bin/hermesctl" member add --tenant demo --email "$owner_email" --role owner --json \
  | sed -n 's/.*"sign_in_link":"\([^"]*\)".*/\1/p')

cat <<MSG

  Hermes Cloud is starting on http://127.0.0.1:${api_port}
  tenant: demo   agent (model): ${agent_name}   provider: ${base_url}
  API key (shown once): ${key}

  Console: sign in as ${owner_email} (owner of demo) with this one-time link (valid 60 minutes):
    ${console_link}
  Another link later: ${bin}/hermesctl person link --email ${owner_email}

  curl http://127.0.0.1:${api_port}/v1/chat/completions \\
    -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" \\
    -d '{"model": "${agent_name}", "messages": [{"role": "user", "content": "\$ uname -a"}]}'

  Continue a conversation with the X-Hermes-Session-Id header from the response.
  Ctrl-C stops hermesd (it drains running turns first).

MSG
"$bin/hermesd" all &
pids+=($!)
wait "${pids[-1]}"
