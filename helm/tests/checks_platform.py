"""Property checks on what the chart sets up around its workloads, for check.py: each takes a
Render and raises AssertionError.

The migration Job, service accounts, the worker's RBAC held to the sandbox backend's code
(libs/sandbox-kube/src/lib.rs), the sandbox namespace at the Pod Security level manifests.rs
needs and its default-deny NetworkPolicy, the docker backend, autoscaling, the Ingress, the
ServiceMonitor and NOTES.txt.
"""

from __future__ import annotations

import json
import re

from rendering import (EXPECTED_RULES, KUBE_LIB, KUBE_MANIFESTS, NAMESPACE, ROLES, Render, container, env_of,
                       labels)


def check_migrations(r: Render) -> None:
    m = r.values["migrations"]
    jobs = r.of("Job")
    assert len(jobs) == 1, f"want one migration Job, found {len(jobs)}"
    job = jobs[0]
    ann = job["metadata"].get("annotations") or {}
    c = container(job["spec"]["template"]["spec"])
    assert c["args"] == ["migrate"] and "command" not in c, "the Job runs `hermesd migrate` through the entrypoint"
    assert not any(a in ("sh", "-c", "/bin/sh", "bash") for a in c.get("command", []) + c["args"]), "no shell in the image"
    assert isinstance(job["spec"].get("backoffLimit"), int), "backoffLimit"
    assert isinstance(job["spec"].get("activeDeadlineSeconds"), int), "activeDeadlineSeconds: a missing database must fail"
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    if m["useHelmHooks"]:
        assert set(ann.get("helm.sh/hook", "").split(",")) == {"pre-install", "pre-upgrade"}, "hook: pre-install,pre-upgrade"
        assert re.fullmatch(r"-?\d+", ann.get("helm.sh/hook-weight", "")), "hook-weight"
        assert ann.get("helm.sh/hook-delete-policy") == "before-hook-creation", "delete policy before-hook-creation"
        assert "serviceAccountName" not in job["spec"]["template"]["spec"], "a pre-install hook cannot use the release's SA"
        for s in r.of("Secret"):  # a Secret the hook reads must exist before it
            sann = s["metadata"].get("annotations") or {}
            assert "pre-install" in sann.get("helm.sh/hook", ""), "the chart's Secret must be a hook too"
            assert int(sann["helm.sh/hook-weight"]) < int(ann["helm.sh/hook-weight"]), "Secret before the Job"
    else:
        assert not any(k.startswith("helm.sh/hook") for k in ann), "useHelmHooks=false renders a plain Job"
        assert re.search(r"-migrate-[0-9a-f]{8}$", job["metadata"]["name"]), "plain Job named after its image"
        for s in r.of("Secret"):
            assert not (s["metadata"].get("annotations") or {}).get("helm.sh/hook"), "plain Secret without hooks"


def check_service_accounts(r: Render) -> None:
    """A token only in the worker, and only when it starts sandbox pods."""
    kube = r.values["sandbox"]["backend"] == "kubernetes"
    for role, pod in r.hermes_pods():
        want = kube and role == "worker"
        assert pod.get("automountServiceAccountToken") is want, f"{role}: automountServiceAccountToken must be {want}"
    for name, pod in r.all_pods():
        assert "automountServiceAccountToken" in pod, f"{name}: say automountServiceAccountToken explicitly"


def kube_calls_from_code() -> dict:
    """(group, resource) -> verbs, read from the backend's calls in libs/sandbox-kube/src/lib.rs."""
    src = KUBE_LIB.read_text()
    kinds = {"Pod": ("", "pods"), "Secret": ("", "secrets"), "PersistentVolumeClaim": ("", "persistentvolumeclaims"),
             "NetworkPolicy": ("networking.k8s.io", "networkpolicies")}
    by_fn = {"pod": "Pod", "pvc": "PersistentVolumeClaim", "secret": "Secret", "network_policy": "NetworkPolicy"}
    verbs = {"create": "create", "get_opt": "get", "get": "get", "list": "list", "delete": "delete", "patch": "patch",
             "watch": "watch", "replace": "update", "delete_collection": "deletecollection", "patch_status": "patch"}
    calls: set[tuple[str, str]] = set()
    calls |= set(re.findall(r"api::<(\w+)>\(\)\s*\.(\w+)\(", src))
    for var, kind in re.findall(r"let (\w+) = self\.api::<(\w+)>\(\);", src):
        calls |= {(kind, m) for m in re.findall(rf"\b{var}\s*\.(\w+)\(", src)}
    # `ensure` creates whatever it is given: `self.ensure(&manifests::pvc(..))`, or a variable
    # bound to `manifests::pod(..)` first.
    calls |= {(by_fn[f], "create") for f in re.findall(r"self\.ensure\(&manifests::(\w+)\(", src)}
    built = dict(re.findall(r"let (?:mut )?(\w+) = manifests::(\w+)\(", src))
    for var in re.findall(r"self\.ensure\(&(\w+)\)", src):
        assert var in built, f"lib.rs ensures `{var}`, which this test cannot trace to a manifest"
        calls.add((by_fn[built[var]], "create"))
    rules: dict = {}
    for kind, method in calls:
        if kind == "K":  # the generic helper itself; its callers are counted above
            continue
        assert kind in kinds, f"lib.rs calls the API on {kind}: add it to the Role and this test"
        assert method in verbs, f"lib.rs calls Api::<{kind}>::{method}: map it to an RBAC verb here"
        rules.setdefault(kinds[kind], set()).add(verbs[method])
    assert rules, "found no Kubernetes API call in lib.rs: has the backend moved?"
    return rules


def check_rbac(r: Render) -> None:
    """The worker's Role: exactly what the sandbox backend's code calls, in the sandbox namespace."""
    kube = r.values["sandbox"]["backend"] == "kubernetes"
    roles, bindings = r.of("Role"), r.of("RoleBinding")
    assert not r.of("ClusterRole") and not r.of("ClusterRoleBinding"), "no cluster-wide RBAC"
    if not kube:
        assert not roles and not bindings, "docker sandboxes need no RBAC"
        return
    assert len(roles) == 1 and len(bindings) == 1, "one Role and one RoleBinding"
    role, binding = roles[0], bindings[0]
    ns = sandbox_namespace(r)
    assert role["metadata"]["namespace"] == ns and binding["metadata"]["namespace"] == ns, "RBAC lives in the sandbox namespace"
    got: dict = {}
    for rule in role["rules"]:
        assert "resourceNames" not in rule and "nonResourceURLs" not in rule
        for g in rule["apiGroups"]:
            for res in rule["resources"]:
                assert "*" not in (g, res) and "*" not in rule["verbs"], "no wildcards"
                got.setdefault((g, res), set()).update(rule["verbs"])
    assert got == EXPECTED_RULES, f"Role rules {got} != expected {EXPECTED_RULES}"
    from_code = kube_calls_from_code()
    assert got == from_code, f"Role rules {got} != the calls in lib.rs {from_code}"
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]}
    worker_sa = r.deployment("worker")["spec"]["template"]["spec"]["serviceAccountName"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": worker_sa, "namespace": NAMESPACE}], "bound to the worker"
    for role_name, pod in r.hermes_pods():
        if role_name != "worker":
            assert pod.get("serviceAccountName") != worker_sa, f"{role_name} must not use the worker's account"


def sandbox_namespace(r: Render) -> str:
    env = env_of(container(r.deployment("worker")["spec"]["template"]["spec"]))
    return env["HERMES__SANDBOX__KUBERNETES__NAMESPACE"]["value"]


def psa_level_for_sandbox_pod() -> str:
    """The strictest Pod Security level the sandbox pod of manifests.rs meets."""
    src = KUBE_MANIFESTS.read_text()
    added = re.search(r"add:\s*Some\(vec!\[(.*?)\]\)", src, re.S)
    caps = set(re.findall(r'"([A-Z_]+)"', added.group(1))) if added else set()
    root = re.search(r"run_as_user:\s*Some\(0\)", src) or re.search(r"run_as_non_root:\s*Some\(false\)", src)
    privileged = re.search(r"(privileged|host_network|host_pid|host_ipc):\s*Some\(true\)", src)
    baseline_caps = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                     "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
    if not root and caps <= {"NET_BIND_SERVICE"} and not privileged:
        return "restricted"
    return "baseline" if caps <= baseline_caps and not privileged else "privileged"


def check_sandbox_namespace(r: Render) -> None:
    """PSA labels at the level the sandbox pod needs, and a default-deny policy: workers in only."""
    kube = r.values["sandbox"]["backend"] == "kubernetes"
    if not kube:
        assert not r.of("Namespace") and not r.of("NetworkPolicy"), "docker sandboxes render no sandbox namespace"
        return
    ns = sandbox_namespace(r)
    assert ns != NAMESPACE, "sandboxes get a namespace of their own"
    worker_env = env_of(container(r.deployment("worker")["spec"]["template"]["spec"]))
    assert worker_env.get("HERMES__SANDBOX__KUBERNETES__WORKER_NAMESPACE", {}).get("valueFrom") == {
        "fieldRef": {"fieldPath": "metadata.namespace"}
    }, "the worker names its own namespace, which each sandbox's NetworkPolicy admits"
    tls = str(r.values["sandbox"]["kubernetes"]["tls"]).lower()
    assert worker_env["HERMES__SANDBOX__KUBERNETES__TLS"]["value"] == tls, "TLS to sandboxd as sandbox.kubernetes.tls says"
    if r.values["sandbox"]["namespace"]["create"]:
        nsobj = r.one("Namespace", name=ns)
        level = psa_level_for_sandbox_pod()
        nl = labels(nsobj)
        assert nl.get("pod-security.kubernetes.io/enforce") == level, f"enforce must be {level} (what manifests.rs needs)"
        for mode in ("audit", "warn"):
            assert f"pod-security.kubernetes.io/{mode}" in nl, f"PSA {mode} label"
        assert (nsobj["metadata"].get("annotations") or {}).get("helm.sh/resource-policy") == "keep", "keep workspaces"
    policies = [p for p in r.of("NetworkPolicy") if p["metadata"]["namespace"] == ns]
    assert len(policies) == 1, "one default-deny NetworkPolicy in the sandbox namespace"
    spec = policies[0]["spec"]
    assert spec["podSelector"] == {}, "the policy covers every pod of the namespace"
    assert set(spec["policyTypes"]) == {"Ingress", "Egress"}, "both directions governed"
    assert not spec.get("egress"), "no egress by default"
    ingress = spec["ingress"]
    assert len(ingress) == 1 and len(ingress[0]["from"]) == 1, "ingress from one peer only"
    peer = ingress[0]["from"][0]
    worker_sel = r.deployment("worker")["spec"]["selector"]["matchLabels"]
    assert peer.get("podSelector", {}).get("matchLabels") == worker_sel, "only worker pods come in"
    assert peer.get("namespaceSelector", {}).get("matchLabels") == {"kubernetes.io/metadata.name": NAMESPACE}
    assert "ipBlock" not in peer
    assert [p["port"] for p in ingress[0]["ports"]] == [r.values["sandbox"]["kubernetes"]["port"]], "sandboxd's port only"
    # The per-sandbox policies of manifests.rs admit pods labelled component=worker: ours are.
    assert r.deployment("worker")["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"] == "worker"


def check_docker_backend(r: Render) -> None:
    if r.values["sandbox"]["backend"] != "docker":
        return
    pod = r.deployment("worker")["spec"]["template"]["spec"]
    c, d = container(pod), r.values["sandbox"]["docker"]
    env = env_of(c)
    assert env["HERMES__SANDBOX__BACKEND"]["value"] == "docker"
    vols = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    sock = [n for n, v in vols.items() if v.get("hostPath", {}).get("path") == d["socketPath"]]
    assert sock and mounts.get(sock[0]) == d["socketPath"], "the Docker socket is mounted from the host"
    ipc = [n for n, v in vols.items() if v.get("hostPath", {}).get("path") == d["ipcHostPath"]]
    assert ipc and mounts.get(ipc[0]) == d["ipcHostPath"] == env["HERMES__SANDBOX__DOCKER__IPC_DIR"]["value"], "ipc dir"
    if d.get("socketGroup") is not None:
        assert d["socketGroup"] in pod["securityContext"].get("supplementalGroups", []), "socket group"
    assert "HERMES__SANDBOX__KUBERNETES__NAMESPACE" not in env


def check_egress_trusted_cas(r: Render) -> None:
    """sandbox.egressTrustedCAs: its ConfigMap's keys, read-only in the workers alone, named to hermesd."""
    ca = r.values["sandbox"].get("egressTrustedCAs", {})
    for role in ROLES:
        pod = r.deployment(role)["spec"]["template"]["spec"]
        c, vols = container(pod), {v["name"]: v for v in pod["volumes"]}
        files = env_of(c).get("HERMES__SANDBOX__EGRESS_TRUSTED_CA_FILES")
        if role != "worker" or not ca.get("configMap"):
            assert files is None and "egress-ca" not in vols, f"{role}: no egress CAs"
            continue
        source = vols["egress-ca"]["configMap"]
        assert source["name"] == ca["configMap"] and [i["key"] for i in source["items"]] == ca["keys"], source
        mount = next(m for m in c["volumeMounts"] if m["name"] == "egress-ca")
        assert mount.get("readOnly") is True, "the CAs are read-only"
        named = [f"{mount['mountPath']}/{key}" for key in ca["keys"]]
        assert json.loads(files["value"]) == named, files


def check_autoscaling(r: Render) -> None:
    hpas = {h["spec"]["scaleTargetRef"]["name"]: h for h in r.of("HorizontalPodAutoscaler", "autoscaling/v2")}
    assert len(hpas) == len(r.of("HorizontalPodAutoscaler")), "HPAs are autoscaling/v2"
    scaled = r.of("ScaledObject", "keda.sh/v1alpha1")
    for role in ("api", "gateway"):
        d = r.deployment(role)
        if r.values[role]["autoscaling"]["enabled"]:
            h = hpas.get(d["metadata"]["name"])
            assert h and h["spec"]["scaleTargetRef"]["kind"] == "Deployment", f"{role}: HPA targets its Deployment"
            assert h["spec"]["metrics"][0]["resource"]["name"] == "cpu", f"{role}: CPU"
            assert "replicas" not in d["spec"], f"{role}: replicas left to the HPA"
        else:
            assert d["metadata"]["name"] not in hpas and d["spec"]["replicas"] == r.values[role]["replicas"]
    w = r.values["worker"]["autoscaling"]
    d = r.deployment("worker")
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": d["metadata"]["name"]}
    if w["mode"] == "none":
        assert d["metadata"]["name"] not in hpas and not scaled, "no worker autoscaler"
        assert d["spec"]["replicas"] == r.values["worker"]["replicas"]
        return
    assert "replicas" not in d["spec"], "worker replicas left to the autoscaler"
    if w["mode"] == "hpa":
        h = hpas.get(d["metadata"]["name"])
        assert h and not scaled, "mode hpa: an HPA, no ScaledObject"
        assert h["spec"]["scaleTargetRef"] == target, "the HPA targets the worker Deployment"
        ext = h["spec"]["metrics"][0]
        assert ext["type"] == "External" and ext["external"]["metric"]["name"] == "hermes_turns_queued"
        assert ext["external"]["target"] == {"type": "AverageValue", "averageValue": str(w["queuedTurnsPerReplica"])}
        assert h["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == w["scaleDownStabilizationSeconds"]
    else:
        assert len(scaled) == 1 and d["metadata"]["name"] not in hpas, "mode keda: a ScaledObject, no HPA of ours"
        spec = scaled[0]["spec"]
        assert spec["scaleTargetRef"] == target, "the ScaledObject targets the worker Deployment"
        assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (w["minReplicas"], w["maxReplicas"])
        t = spec["triggers"][0]
        assert t["type"] == "prometheus"
        assert t["metadata"] == {"serverAddress": w["keda"]["serverAddress"], "query": w["keda"]["query"],
                                 "threshold": str(w["queuedTurnsPerReplica"])}, f"trigger {t['metadata']}"
        assert "hermes_turns_queued" in t["metadata"]["query"]


def check_ingress(r: Render) -> None:
    ing = r.values["ingress"]
    objs = r.of("Ingress", "networking.k8s.io/v1")
    if not ing["enabled"]:
        assert not objs, "the Ingress is off by default"
        return
    assert len(objs) == 1
    spec = objs[0]["spec"]
    api, gw = r.deployment("api")["metadata"]["name"], r.deployment("gateway")["metadata"]["name"]
    routes = {(rule["host"], p["path"]): p["backend"]["service"] for rule in spec["rules"] for p in rule["http"]["paths"]}
    host = ing["host"]
    assert routes[(host, "/")] == {"name": api, "port": {"name": "http"}}, "/ goes to the api"
    gw_host = ing["gateway"]["host"] or host
    for path in ing["gateway"]["paths"]:
        assert routes[(gw_host, path)] == {"name": gw, "port": {"name": "webhooks"}}, f"{path} goes to the gateway"
    assert all(b["port"].get("name") not in ("ops",) and b["port"].get("number") != r.values["opsPort"] for b in routes.values())
    if ing["tls"]["enabled"]:
        assert spec["tls"][0]["hosts"][0] == host
    env = env_of(container(r.deployment("api")["spec"]["template"]["spec"]))
    scheme = "https" if ing["tls"]["enabled"] else "http"
    assert env["HERMES__GATEWAY__PUBLIC_URL"]["value"] == f"{scheme}://{gw_host}", "webhook URLs name the public host"


def check_service_monitor(r: Render) -> None:
    sms = r.of("ServiceMonitor")
    if not r.values["metrics"]["serviceMonitor"]["enabled"]:
        assert not sms, "the ServiceMonitor is off by default"
        return
    assert len(sms) == 1
    sm = sms[0]
    assert sm["spec"]["endpoints"][0]["port"] == "ops" and sm["spec"]["endpoints"][0]["path"] == "/metrics"
    for k, v in r.values["metrics"]["serviceMonitor"]["labels"].items():
        assert labels(sm).get(k) == v, "ServiceMonitor labels for the Prometheus selector"
    sel = sm["spec"]["selector"]
    for role in ROLES:  # every role's ops Service is selected
        svc = [s for s in r.of("Service") if labels(s)["app.kubernetes.io/component"] == role
               and any(p["name"] == "ops" for p in s["spec"]["ports"])]
        assert svc and all(labels(svc[0]).get(k) == v for k, v in sel["matchLabels"].items()), f"{role} not scraped"
        assert role in sel["matchExpressions"][0]["values"]


def check_notes(r: Render) -> None:
    api = r.deployment("api")["metadata"]["name"]
    for text in (f"exec deploy/{api} -- hermesctl tenant create acme", "hermesctl key create --tenant acme --json",
                 "hermesctl agent create --tenant acme"):
        assert text in r.notes, f"NOTES.txt lacks `{text}`"

