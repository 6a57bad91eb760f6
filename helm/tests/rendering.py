"""Rendering, linting and schema validation of the Helm chart helm/hermes-cloud, for check.py.

The chart's paths and the constants the checks share; the values sets (SCENARIOS); loading and
merging values; Render, one rendering of the chart through helm-python-sdk; `helm lint --strict`;
and check_schemas, which validates every rendered object against the Kubernetes 1.30 schemas
(kubernetes-validate, strict; the CRDs ScaledObject, ServiceMonitor and PrometheusRule by hand).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import helm_python as helm
import kubernetes_validate as kv
import yaml

HERE = Path(__file__).resolve().parent
CHART = HERE.parent / "hermes-cloud"
REPO = HERE.parent.parent
KUBE_LIB = REPO / "libs/sandbox-kube/src/lib.rs"
KUBE_MANIFESTS = REPO / "libs/sandbox-kube/src/manifests.rs"
GRAFANA = REPO / "deploy/grafana"  # the canonical dashboard and rules; the chart ships copies
K8S_VERSION = "1.30.0"
RELEASE = NAMESPACE = "hermes"

ROLES = ("api", "gateway", "worker", "scheduler")
COMMON_LABELS = (
    "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
    "app.kubernetes.io/component", "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by",
    "helm.sh/chart",
)
SELECTOR_KEYS = {"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component"}
SECRET_ENV = {  # variable -> the values entry it comes from
    "HERMES__DATABASE__URL": "databaseUrl", "HERMES__REDIS__URL": "redisUrl",
    "HERMES__RABBITMQ__URL": "rabbitmqUrl", "HERMES__SECRETS__MASTER_KEY": "masterKey",
}
# Custom resources kubernetes-validate has no schema for; their fields are checked by check_crd.
CRDS = {("keda.sh/v1alpha1", "ScaledObject"), ("monitoring.coreos.com/v1", "ServiceMonitor"),
        ("monitoring.coreos.com/v1", "PrometheusRule")}
# The Role the worker needs, from libs/sandbox-kube/src/lib.rs (and re-derived from it by
# checks_platform.kube_calls_from_code).
EXPECTED_RULES = {
    ("", "pods"): {"create", "delete", "get", "list"},
    ("", "secrets"): {"create", "get"},
    ("", "persistentvolumeclaims"): {"create"},
    ("networking.k8s.io", "networkpolicies"): {"patch"},
}


# Values sets: (name, files applied in order).
V = HERE / "values"
SCENARIOS = [
    ("default", [V / "default.yaml"]),
    ("dev", [CHART / "values-dev.yaml"]),
    ("docker", [V / "default.yaml", V / "docker.yaml"]),
    ("keda", [V / "default.yaml", V / "keda.yaml"]),
    ("hpa", [V / "default.yaml", V / "hpa.yaml"]),
    ("ingress", [V / "default.yaml", V / "ingress.yaml"]),
    ("hooks-off", [V / "default.yaml", V / "hooks-off.yaml"]),
    ("observability", [V / "default.yaml", V / "observability.yaml"]),
    ("tracing", [V / "default.yaml", V / "tracing.yaml"]),
    ("egress-ca", [V / "default.yaml", V / "egress-ca.yaml"]),
]


# --- rendering -------------------------------------------------------------------------------

def merge(a: dict, b: dict) -> dict:
    """Deep merge, later wins, like repeated `helm -f`."""
    out = dict(a)
    for k, v in b.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_values(*files: Path) -> dict:
    values: dict = {}
    for f in files:
        values = merge(values, yaml.safe_load(f.read_text()) or {})
    return values


def chart_defaults() -> dict:
    return yaml.safe_load((CHART / "values.yaml").read_text())


class Render:
    """One rendering: the objects, NOTES.txt and the effective values (defaults + files)."""

    def __init__(self, name: str, values: dict):
        self.name, self.user_values = name, values
        self.values = merge(chart_defaults(), values)
        with helm.Chart.load(str(CHART)) as chart:
            out = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
        self.notes = next((t for p, t in out.items() if p.endswith("NOTES.txt")), "")
        self.docs = [d for p, t in sorted(out.items()) if not p.endswith("NOTES.txt")
                     for d in yaml.safe_load_all(t) if d]

    def of(self, kind: str, api_version: str | None = None) -> list[dict]:
        return [d for d in self.docs if d["kind"] == kind and (api_version is None or d["apiVersion"] == api_version)]

    def one(self, kind: str, component: str | None = None, name: str | None = None) -> dict:
        found = [d for d in self.of(kind) if (component is None or labels(d).get("app.kubernetes.io/component") == component)
                 and (name is None or d["metadata"]["name"] == name)]
        assert len(found) == 1, f"expected one {kind} {component or name or ''}, found {len(found)}"
        return found[0]

    def deployment(self, role: str) -> dict:
        return self.one("Deployment", component=role)

    def hermes_pods(self) -> list[tuple[str, dict]]:
        """(component, pod spec) of every hermesd pod: the four roles and the migration Job."""
        return [(labels(d)["app.kubernetes.io/component"], d["spec"]["template"]["spec"])
                for d in self.of("Deployment") + self.of("Job")
                if labels(d)["app.kubernetes.io/component"] in ROLES + ("migrate",)]

    def all_pods(self) -> list[tuple[str, dict]]:
        return [(d["metadata"]["name"], d["spec"]["template"]["spec"]) for d in self.of("Deployment") + self.of("Job")]


def labels(doc: dict) -> dict:
    return doc["metadata"].get("labels") or {}


def container(pod: dict) -> dict:
    return pod["containers"][0]


def env_of(c: dict) -> dict:
    return {e["name"]: e for e in c.get("env", [])}


@contextlib.contextmanager
def quiet_stderr():
    """Helm's Go side logs every `fail` and `required` to fd 2; the report says it once."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def lint_errors(values: dict) -> list[str]:
    report = helm.lint(str(CHART), values, strict=True, namespace=NAMESPACE, kube_version="v" + K8S_VERSION)
    return list(report["errors"]) + [f"{m['path']}: {m['error']}" for m in report["messages"] if m["severity"] >= 2]


# --- schema validation: a check like the others, it takes a Render and raises AssertionError ------

def check_schemas(r: Render) -> None:
    """Every object is valid Kubernetes 1.30 (strict: no unknown fields); CRDs by hand."""
    for d in r.docs:
        what = f"{d.get('kind')} {d.get('metadata', {}).get('name')}"
        try:
            kv.validate(d, K8S_VERSION, strict=True)
        except kv.SchemaNotFoundError:
            assert (d.get("apiVersion"), d.get("kind")) in CRDS, f"no schema for {d.get('apiVersion')} {what}"
            check_crd(d)
        except kv.ValidationError as e:
            raise AssertionError(f"{what}: {'/'.join(map(str, e.path))}: {e.message}") from None


def check_crd(d: dict) -> None:
    spec = d.get("spec") or {}
    assert d["metadata"].get("name"), f"{d['kind']} without a name"
    if d["kind"] == "ScaledObject":
        target = spec.get("scaleTargetRef") or {}
        assert target.get("name"), "ScaledObject.spec.scaleTargetRef.name is required"
        for key in ("minReplicaCount", "maxReplicaCount", "pollingInterval", "cooldownPeriod"):
            assert isinstance(spec.get(key), int), f"ScaledObject.spec.{key} must be an integer"
        assert spec["minReplicaCount"] <= spec["maxReplicaCount"], "ScaledObject min above max"
        triggers = spec.get("triggers") or []
        assert triggers, "ScaledObject.spec.triggers must not be empty"
        for t in triggers:
            assert t.get("type") and isinstance(t.get("metadata"), dict), "a trigger needs type and metadata"
            assert all(isinstance(v, str) for v in t["metadata"].values()), "trigger metadata values are strings"
    elif d["kind"] == "ServiceMonitor":
        assert isinstance(spec.get("selector"), dict), "ServiceMonitor.spec.selector is required"
        endpoints = spec.get("endpoints") or []
        assert endpoints and all(e.get("port") for e in endpoints), "ServiceMonitor endpoints need a port"
    else:  # PrometheusRule: the operator's required fields and types
        groups = spec.get("groups")
        assert isinstance(groups, list) and groups, "PrometheusRule.spec.groups must be a non-empty list"
        for g in groups:
            assert isinstance(g.get("name"), str) and g["name"], "a rule group needs a name"
            assert isinstance(g.get("rules"), list) and g["rules"], f"group {g['name']}: rules must be a non-empty list"
            for rule in g["rules"]:
                assert ("alert" in rule) != ("record" in rule), f"group {g['name']}: a rule is either alert or record"
                assert isinstance(rule.get("expr"), str) and rule["expr"].strip(), f"{rule.get('alert')}: expr is required"
                assert set(rule) <= {"alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"}, \
                    f"{rule.get('alert')}: unknown fields {sorted(set(rule))}"
                for key in ("labels", "annotations"):
                    assert all(isinstance(v, str) for v in (rule.get(key) or {}).values()), f"{key} values are strings"

