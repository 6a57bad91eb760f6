"""Property checks on the chart's workloads, for check.py: each takes a Render and raises AssertionError.

Labels and selectors, pod security, probes and ports, Services, resources, the worker's drain and
grace period, PDBs, topology spread, secrets by reference in the environment, `config` as
HERMES__SECTION__KEY variables, and the images.
"""

from __future__ import annotations

import json
import re

import yaml

from rendering import (CHART, COMMON_LABELS, RELEASE, ROLES, SECRET_ENV, SELECTOR_KEYS, Render, container, env_of,
                       labels)


def check_labels_and_selectors(r: Render) -> None:
    """Common labels everywhere; selectors are exactly name, instance and component."""
    for d in r.docs:
        missing = [k for k in COMMON_LABELS if k not in labels(d)]
        assert not missing, f"{d['kind']} {d['metadata']['name']} lacks labels {missing}"
        assert labels(d)["app.kubernetes.io/managed-by"] == "Helm"
        assert labels(d)["app.kubernetes.io/part-of"] == "hermes-cloud"
    for d in r.of("Deployment"):
        sel = d["spec"]["selector"]["matchLabels"]
        assert set(sel) == SELECTOR_KEYS, f"Deployment {d['metadata']['name']} selects on {sorted(sel)}"
        assert sel["app.kubernetes.io/instance"] == RELEASE
        tmpl = d["spec"]["template"]["metadata"]["labels"]
        assert all(tmpl.get(k) == v for k, v in sel.items()), f"{d['metadata']['name']}: pods do not match their selector"
    for s in r.of("Service"):
        assert set(s["spec"]["selector"]) == SELECTOR_KEYS, f"Service {s['metadata']['name']} selector"
    for p in r.of("PodDisruptionBudget"):
        assert set(p["spec"]["selector"]["matchLabels"]) == SELECTOR_KEYS


def check_pod_security(r: Render) -> None:
    """Pod Security "restricted" on every pod, a read-only root and /tmp on an emptyDir."""
    for name, pod in r.all_pods():
        psc = pod.get("securityContext") or {}
        assert psc.get("runAsNonRoot") is True, f"{name}: pod runAsNonRoot must be true"
        assert isinstance(psc.get("runAsUser"), int) and psc["runAsUser"] > 0, f"{name}: pod needs a non-root runAsUser"
        assert (psc.get("seccompProfile") or {}).get("type") == "RuntimeDefault", f"{name}: seccomp RuntimeDefault"
        for flag in ("hostNetwork", "hostPID", "hostIPC"):
            assert not pod.get(flag), f"{name}: {flag}"
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for c in pod.get("initContainers", []) + pod["containers"]:
            sc = c.get("securityContext") or {}
            where = f"{name}/{c['name']}"
            assert sc.get("allowPrivilegeEscalation") is False, f"{where}: allowPrivilegeEscalation must be false"
            assert sc.get("readOnlyRootFilesystem") is True, f"{where}: readOnlyRootFilesystem must be true"
            assert "ALL" in (sc.get("capabilities") or {}).get("drop", []), f"{where}: capabilities must drop ALL"
            assert not (sc.get("capabilities") or {}).get("add"), f"{where}: adds capabilities"
            assert not sc.get("privileged"), f"{where}: privileged"
            assert sc.get("runAsNonRoot", True) is not False and sc.get("runAsUser", 1) != 0, f"{where}: root"
            tmp = [m for m in c.get("volumeMounts", []) if m["mountPath"] == "/tmp"]
            assert tmp and "emptyDir" in volumes[tmp[0]["name"]], f"{where}: /tmp must be an emptyDir"
        # Only the docker backend's worker may touch the host, and only these two paths.
        host = [v for v in volumes.values() if "hostPath" in v]
        if host:
            assert r.values["sandbox"]["backend"] == "docker" and name.endswith("-worker"), f"{name}: hostPath volume"


def check_probes_and_ports(r: Render) -> None:
    """Startup, liveness (/healthz) and readiness (/readyz) on the ops port of every role."""
    ops = r.values["opsPort"]
    for role, pod in r.hermes_pods():
        if role == "migrate":
            assert not any(k in container(pod) for k in ("livenessProbe", "readinessProbe")), "a Job has no probes"
            continue
        c = container(pod)
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        assert ports.get("ops") == ops, f"{role}: container port ops must be {ops}"
        for probe, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            get = (c.get(probe) or {}).get("httpGet") or {}
            assert get.get("path") == path, f"{role}: {probe} must GET {path}"
            assert get.get("port") in ("ops", ops), f"{role}: {probe} must use the ops port, not {get.get('port')}"
        assert env_of(c)["HERMES__OPS__BIND"]["value"].endswith(f":{ops}"), f"{role}: HERMES__OPS__BIND"
        assert c["args"] == [role], f"{role}: runs `hermesd {role}`"
        expected = {"api": {"http", "ops"}, "gateway": {"webhooks", "ops"}}.get(role, {"ops"})
        assert set(ports) == expected, f"{role}: ports {sorted(ports)}"
    for name, pod in r.all_pods():
        if not name.endswith("-migrate") and "-migrate-" not in name:
            assert container(pod).get("readinessProbe"), f"{name}: no readiness probe"


def check_services(r: Render) -> None:
    """api: http + ops; gateway: webhooks + ops; worker, scheduler: ops only. ops never exposed."""
    want = {"api": {"http", "ops"}, "gateway": {"webhooks", "ops"}, "worker": {"ops"}, "scheduler": {"ops"}}
    for role, ports in want.items():
        services = [s for s in r.of("Service") if labels(s)["app.kubernetes.io/component"] == role]
        assert services, f"no Service for {role}"
        seen = set()
        for s in services:
            names = {p["name"] for p in s["spec"]["ports"]}
            if s["spec"].get("type", "ClusterIP") != "ClusterIP":
                assert "ops" not in names, f"Service {s['metadata']['name']} ({s['spec']['type']}) exposes the ops port"
            for p in s["spec"]["ports"]:
                assert p["targetPort"] == p["name"], f"{s['metadata']['name']}: port {p['name']} targets {p['targetPort']}"
            seen |= names
        assert seen == ports, f"{role}: Services carry {sorted(seen)}, want {sorted(ports)}"


def check_resources(r: Render) -> None:
    for name, pod in r.all_pods():
        for c in pod["containers"]:
            res = c.get("resources") or {}
            req, lim = res.get("requests") or {}, res.get("limits") or {}
            assert "cpu" in req and "memory" in req, f"{name}: requests cpu and memory"
            assert "memory" in lim, f"{name}: limits memory"


def check_worker_drain(r: Render) -> None:
    """terminationGracePeriodSeconds = drainSeconds + margin > drainSeconds, from one value."""
    w = r.values["worker"]
    pod = r.deployment("worker")["spec"]["template"]["spec"]
    grace = pod["terminationGracePeriodSeconds"]
    drain = int(env_of(container(pod))["HERMES__WORKER__DRAIN_SECONDS"]["value"])
    assert drain == w["drainSeconds"], f"HERMES__WORKER__DRAIN_SECONDS {drain} != worker.drainSeconds {w['drainSeconds']}"
    assert grace > drain, f"worker terminationGracePeriodSeconds {grace} must exceed the drain ({drain})"
    assert grace == drain + w["terminationMarginSeconds"], "grace period is drainSeconds + terminationMarginSeconds"


def check_pdbs(r: Render) -> None:
    for role in ROLES:
        if not r.values[role]["enabled"]:
            continue
        d = r.deployment(role)
        pdbs = [p for p in r.of("PodDisruptionBudget", "policy/v1") if labels(p)["app.kubernetes.io/component"] == role]
        assert len(pdbs) == 1, f"{role}: want one policy/v1 PodDisruptionBudget, found {len(pdbs)}"
        assert pdbs[0]["spec"]["selector"]["matchLabels"] == d["spec"]["selector"]["matchLabels"], f"{role}: PDB selector"
        assert "maxUnavailable" in pdbs[0]["spec"], f"{role}: PDB must use maxUnavailable (one replica must not block drains)"


def check_topology_spread(r: Render) -> None:
    for role in ROLES:
        d = r.deployment(role)
        tsc = d["spec"]["template"]["spec"].get("topologySpreadConstraints") or []
        assert {t["topologyKey"] for t in tsc} >= {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}, f"{role}: spread"
        for t in tsc:
            assert t["labelSelector"]["matchLabels"] == d["spec"]["selector"]["matchLabels"], f"{role}: spread selector"


def check_env(r: Render) -> None:
    """No variable twice; the roles never migrate on start; the four secrets by reference."""
    s = r.values["secrets"]
    for role, pod in r.hermes_pods():
        c = container(pod)
        names = [e["name"] for e in c.get("env", [])]
        assert len(names) == len(set(names)), f"{role}: duplicate env {sorted(n for n in names if names.count(n) > 1)}"
        env = env_of(c)
        wanted = ["HERMES__DATABASE__URL"] if role == "migrate" else list(SECRET_ENV)
        for var in wanted:
            e = env.get(var)
            assert e and "value" not in e, f"{role}: {var} must come from a Secret, not a value"
            ref = e["valueFrom"]["secretKeyRef"]
            entry = s[SECRET_ENV[var]]
            name = f"{RELEASE}-secrets" if s["create"] else (entry["existingSecret"] or s["existingSecret"])
            assert (ref["name"], ref["key"]) == (name, entry["key"]), f"{role}: {var} from {ref}, want {name}/{entry['key']}"
        for e in c.get("env", []):
            assert not re.search(r"(postgres|redis|amqp)://", str(e.get("value", ""))), f"{role}: a URL in plain env"
        if role != "migrate":
            assert env["HERMES__DATABASE__MIGRATE_ON_START"]["value"] == "false", f"{role}: migrate_on_start"
            assert env["HERMES__TELEMETRY__LOG_FORMAT"]["value"] == "json", f"{role}: json logs"
    secrets = r.of("Secret")
    if s["create"]:
        assert len(secrets) == 1, "secrets.create renders one Secret"
        for d in r.of("Deployment"):
            if labels(d)["app.kubernetes.io/component"] in ROLES:
                ann = d["spec"]["template"]["metadata"].get("annotations") or {}
                assert re.fullmatch(r"[0-9a-f]{64}", ann.get("checksum/secret", "")), "pods must roll when the Secret changes"
    else:
        assert not secrets, "no Secret is rendered with existingSecret"


def flatten(prefix: str, tree: dict) -> dict:
    """`config` as hermesd reads it from the environment: HERMES__SECTION__KEY=value."""
    out = {}
    for k, v in tree.items():
        name = f"{prefix}__{k.upper()}"
        if isinstance(v, dict):
            out |= flatten(name, v)
        else:
            out[name] = json.dumps(v, separators=(",", ":")) if isinstance(v, list) else str(v).lower() if isinstance(v, bool) else str(v)
    return out


def check_config_env(r: Render) -> None:
    """Every `config` leaf reaches every role as HERMES__SECTION__KEY, numbers unmangled."""
    want = flatten("HERMES", r.values["config"])
    assert want, "config has at least the telemetry settings"
    for role, pod in r.hermes_pods():
        if role == "migrate":
            continue
        env = env_of(container(pod))
        for name, value in want.items():
            got = env.get(name, {}).get("value")
            if name.startswith("HERMES__") and got and got.startswith("["):
                got = json.dumps(json.loads(got), separators=(",", ":"))
            assert got == value, f"{role}: {name}={got!r}, want {value!r}"


def check_images(r: Render) -> None:
    """One image for every role and the Job, its tag the appVersion unless set; never latest."""
    app_version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    img = r.values["image"]
    want = f"{img['repository']}:{img['tag'] or app_version}"
    for role, pod in r.hermes_pods():
        c = container(pod)
        assert c["image"] == want, f"{role}: image {c['image']}, want {want}"
        assert c["imagePullPolicy"] == img["pullPolicy"]
    if r.name != "dev":  # values-dev.yaml runs locally built images
        for _, pod in r.all_pods():
            for c in pod["containers"]:
                assert not c["image"].endswith(":latest") and ":" in c["image"].rsplit("/", 1)[-1], f"{c['image']}: untagged or latest"
        worker = env_of(container(r.deployment("worker")["spec"]["template"]["spec"]))
        for var in ("HERMES__SANDBOX__KUBERNETES__IMAGE", "HERMES__SANDBOX__DOCKER__IMAGE"):
            if var in worker:
                assert worker[var]["value"].endswith(f":{app_version}"), f"{var}: {worker[var]['value']}"



ADMIN_ENV = ("HERMES__ADMIN__PUBLIC_URL", "HERMES__ADMIN__SESSION_KEYS", "HERMES__ADMIN__OIDC__ISSUER",
             "HERMES__ADMIN__OIDC__CLIENT_ID", "HERMES__ADMIN__OIDC__CLIENT_SECRET")


def check_admin(r: Render) -> None:
    """The console's settings reach the api role only: its address (admin.publicUrl, else the
    Ingress's), its session keys and the identity provider's client secret by Secret reference,
    never as values; without them, none of the variables."""
    a, ing = r.values["admin"], r.values["ingress"]
    for role, pod in r.hermes_pods():
        env = env_of(container(pod))
        if role != "api":
            stray = [n for n in ADMIN_ENV if n in env]
            assert not stray, f"{role}: {stray}: the console is the api role's"
            continue
        url = a["publicUrl"] or (f"{'https' if ing['tls']['enabled'] else 'http'}://{ing['host']}" if ing["enabled"] else "")
        if url:
            assert env.get("HERMES__ADMIN__PUBLIC_URL", {}).get("value") == url, f"api: console URL {env.get('HERMES__ADMIN__PUBLIC_URL')}, want {url}"
        else:
            assert "HERMES__ADMIN__PUBLIC_URL" not in env, "api: a console URL from nowhere"
        for var, ref in (("HERMES__ADMIN__SESSION_KEYS", a["sessionKeys"]),
                         ("HERMES__ADMIN__OIDC__CLIENT_SECRET", a["oidc"]["clientSecret"] if a["oidc"]["issuer"] else {"existingSecret": ""})):
            if ref["existingSecret"]:
                e = env.get(var)
                assert e and "value" not in e, f"api: {var} must come from a Secret, not a value"
                assert e["valueFrom"] == {"secretKeyRef": {"name": ref["existingSecret"], "key": ref["key"]}}, f"api: {var} from {e}"
            else:
                assert var not in env, f"api: {var} without its Secret"
        if a["oidc"]["issuer"]:
            assert env["HERMES__ADMIN__OIDC__ISSUER"]["value"] == a["oidc"]["issuer"], "api: the issuer"
            assert env["HERMES__ADMIN__OIDC__CLIENT_ID"]["value"] == a["oidc"]["clientId"], "api: the client id"
        else:
            assert "HERMES__ADMIN__OIDC__ISSUER" not in env, "api: an issuer from nowhere"
