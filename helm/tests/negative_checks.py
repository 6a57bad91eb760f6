"""The checks that must fail, for check.py: wrong values the chart must refuse, and broken
renders each property check must catch.

check_refusals: every file in values/bad/ must be refused, by render and by lint, with the message
its first line names (`# expect: ...`). check_breakages: each check is run on a broken copy of a
good render (BREAKAGES), to show it can fail. Both report through check.py's `record`.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Callable

import helm_python as helm

from checks_observability import check_observability, check_traces
from checks_platform import (check_autoscaling, check_egress_trusted_cas, check_ingress, check_migrations, check_rbac, check_sandbox_namespace,
                             check_service_accounts)
from checks_workloads import (check_admin, check_config_env, check_env, check_images, check_labels_and_selectors, check_pdbs,
                              check_pod_security, check_probes_and_ports, check_worker_drain)
from rendering import RELEASE, V, Render, check_schemas, container, labels, lint_errors, load_values, merge, quiet_stderr

Record = Callable[[str, Callable[[], None]], None]


# --- refusals: wrong values must be refused, by lint and by render, with the message the file names ---

def check_refusals(record: Record) -> None:
    base = load_values(V / "default.yaml")
    for bad in sorted((V / "bad").glob("*.yaml")):
        expect = re.match(r"# expect: (.+)", bad.read_text()).group(1).strip()
        values = merge(base, load_values(bad))

        def refused(values=values, expect=expect):
            with quiet_stderr():
                _refused(values, expect)

        record(f"refused: {bad.stem}", refused)


def _refused(values: dict, expect: str) -> None:
    try:
        Render("bad", values)
    except helm.HelmError as e:
        assert expect in str(e), f"refused, but without `{expect}`: {str(e).strip()[:400]}"
    else:
        raise AssertionError("rendered without complaint")
    # Lint sees schema errors; a template's `fail`/`required` shows up only as a render error.
    errors = " | ".join(lint_errors(values))
    assert errors or "at '/" not in expect, "lint passed values the schema refuses"
    assert expect in errors or "at '/" not in expect, f"lint refused without `{expect}`"


# --- breakages: each must make its check fail -----------------------------------------------------

def pod_of(docs, component):
    return next(d for d in docs if d["kind"] == "Deployment" and labels(d)["app.kubernetes.io/component"] == component)[
        "spec"]["template"]["spec"]


def _first(docs, kind):
    return next(d for d in docs if d["kind"] == kind)


BREAKAGES = [  # (description, scenario, check, mutation of the docs)
    ("the egress CAs mounted writable", "egress-ca", check_egress_trusted_cas,
     lambda docs: next(m for m in container(pod_of(docs, "worker"))["volumeMounts"] if m["name"] == "egress-ca")
     .update(readOnly=False)),
    ("the egress CAs not named to hermesd", "egress-ca", check_egress_trusted_cas,
     lambda docs: _env(container(pod_of(docs, "worker")), "HERMES__SANDBOX__EGRESS_TRUSTED_CA_FILES").update(value="[]")),
    ("the OIDC client secret as a plain value", "ingress", check_admin,
     lambda docs: _env(container(pod_of(docs, "api")), "HERMES__ADMIN__OIDC__CLIENT_SECRET").update(value="s3cret")),
    ("the console's address on the worker", "ingress", check_admin,
     lambda docs: container(pod_of(docs, "worker"))["env"].append({"name": "HERMES__ADMIN__PUBLIC_URL", "value": "https://x"})),
    ("api pod may run as root", "default", check_pod_security,
     lambda docs: pod_of(docs, "api")["securityContext"].pop("runAsNonRoot", None)),
    ("worker container writable root", "default", check_pod_security,
     lambda docs: container(pod_of(docs, "worker"))["securityContext"].update(readOnlyRootFilesystem=False)),
    ("readiness probe on the API port", "default", check_probes_and_ports,
     lambda docs: container(pod_of(docs, "api"))["readinessProbe"]["httpGet"].update(port="http")),
    ("grace period equal to the drain", "default", check_worker_drain,
     lambda docs: pod_of(docs, "worker").update(terminationGracePeriodSeconds=30)),
    ("scheduler PDB missing", "default", check_pdbs,
     lambda docs: docs.remove(next(d for d in docs if d["kind"] == "PodDisruptionBudget"
                                   and labels(d)["app.kubernetes.io/component"] == "scheduler"))),
    ("version in a selector", "default", check_labels_and_selectors,
     lambda docs: next(d for d in docs if d["kind"] == "Deployment")["spec"]["selector"]["matchLabels"].update(
         {"app.kubernetes.io/version": "0.1.0"})),
    ("master key as a plain value", "default", check_env,
     lambda docs: next(e for e in container(pod_of(docs, "worker"))["env"] if e["name"] == "HERMES__SECRETS__MASTER_KEY")
     .update(value="x")),
    ("watch added to the Role", "default", check_rbac,
     lambda docs: _first(docs, "Role")["rules"][0]["verbs"].append("watch")),
    ("configmaps added to the Role", "default", check_rbac,
     lambda docs: _first(docs, "Role")["rules"].append({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]})),
    ("migration Job not a hook", "default", check_migrations,
     lambda docs: _first(docs, "Job")["metadata"]["annotations"].pop("helm.sh/hook", None)),
    ("migration Job without a deadline", "default", check_migrations,
     lambda docs: _first(docs, "Job")["spec"].pop("activeDeadlineSeconds", None)),
    ("sandbox namespace privileged", "default", check_sandbox_namespace,
     lambda docs: _first(docs, "Namespace")["metadata"]["labels"].update({"pod-security.kubernetes.io/enforce": "privileged"})),
    ("sandboxes may reach out", "default", check_sandbox_namespace,
     lambda docs: _first(docs, "NetworkPolicy")["spec"].update(egress=[{}])),
    ("api gets an API token", "default", check_service_accounts,
     lambda docs: pod_of(docs, "api").update(automountServiceAccountToken=True)),
    ("ScaledObject aimed at the api", "keda", check_autoscaling,
     lambda docs: _first(docs, "ScaledObject")["spec"]["scaleTargetRef"].update(name=f"{RELEASE}-api")),
    ("worker HPA on CPU", "hpa", check_autoscaling,
     lambda docs: next(h for h in docs if h["kind"] == "HorizontalPodAutoscaler" and h["metadata"]["name"].endswith("-worker"))[
         "spec"]["metrics"][0].update(type="Resource")),
    ("webhooks routed to the api", "ingress", check_ingress,
     lambda docs: _first(docs, "Ingress")["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"].update(
         name=f"{RELEASE}-api")),
    ("a number in exponent form", "hpa", check_config_env,
     lambda docs: next(e for e in container(pod_of(docs, "api"))["env"] if e["name"] == "HERMES__API__MAX_BODY_BYTES")
     .update(value="1.048576e+07")),
    ("latest image", "default", check_images,
     lambda docs: container(pod_of(docs, "gateway")).update(image="ghcr.io/hermes-cloud/hermes-cloud:latest")),
    ("unknown field in a Deployment", "default", check_schemas,
     lambda docs: container(pod_of(docs, "api")).update(imagePullPolicyy="Always")),
    ("replicas as a string", "default", check_schemas,
     lambda docs: next(d for d in docs if d["kind"] == "Deployment")["spec"].update(replicas="two")),
    ("ScaledObject without triggers", "keda", check_schemas,
     lambda docs: _first(docs, "ScaledObject")["spec"].update(triggers=[])),
    ("dashboard ConfigMap without the sidecar's label", "observability", check_observability,
     lambda docs: _dashboard(docs)["metadata"]["labels"].pop("grafana_dashboard")),
    ("a panel missing from the shipped dashboard", "observability", check_observability,
     lambda docs: _dashboard(docs)["data"].update({"hermes-overview.json": _drop_panel(_dashboard(docs))})),
    ("an alert missing from the PrometheusRule", "observability", check_observability,
     lambda docs: _first(docs, "PrometheusRule")["spec"]["groups"][0]["rules"].pop()),
    ("the up alert on the file's job regex", "observability", check_observability,
     lambda docs: _first(docs, "PrometheusRule")["spec"]["groups"][-1]["rules"][-2].update(expr='up{job=~".*hermes.*"} == 0')),
    ("a PrometheusRule rule without expr", "observability", check_schemas,
     lambda docs: _first(docs, "PrometheusRule")["spec"]["groups"][0]["rules"][0].pop("expr")),
    ("the worker without the OTLP endpoint", "tracing", check_traces,
     lambda docs: _drop_env(container(pod_of(docs, "worker")), "HERMES__TELEMETRY__OTLP_ENDPOINT")),
    ("the migration Job without the OTLP protocol", "tracing", check_traces,
     lambda docs: _drop_env(container(_first(docs, "Job")["spec"]["template"]["spec"]), "HERMES__TELEMETRY__OTLP_PROTOCOL")),
    ("the OTLP headers as a plain value", "tracing", check_traces,
     lambda docs: _env(container(pod_of(docs, "api")), "OTEL_EXPORTER_OTLP_HEADERS").update(value="api-key=x")),
    ("resource attributes before the pod's name", "tracing", check_traces,
     lambda docs: _move_first(container(pod_of(docs, "gateway")), "OTEL_RESOURCE_ATTRIBUTES")),
    ("one service.name for every role", "tracing", check_traces,
     lambda docs: _env(container(pod_of(docs, "scheduler")), "OTEL_RESOURCE_ATTRIBUTES").update(
         value=_env(container(pod_of(docs, "scheduler")), "OTEL_RESOURCE_ATTRIBUTES")["value"] + ",service.name=hermes")),
    ("an OTLP endpoint with tracing off", "default", check_traces,
     lambda docs: container(pod_of(docs, "api"))["env"].append(
         {"name": "HERMES__TELEMETRY__OTLP_ENDPOINT", "value": "http://otel-collector:4317"})),
]


def _env(c, name):
    return next(e for e in c["env"] if e["name"] == name)


def _drop_env(c, name):
    c["env"].remove(_env(c, name))


def _move_first(c, name):
    e = _env(c, name)
    c["env"].remove(e)
    c["env"].insert(0, e)


def _dashboard(docs):
    return next(d for d in docs if d["kind"] == "ConfigMap" and "hermes-overview.json" in d.get("data", {}))


def _drop_panel(cm) -> str:
    dash = json.loads(cm["data"]["hermes-overview.json"])
    dash["panels"].pop()
    return json.dumps(dash)



def check_breakages(record: Record, renders: dict[str, Render]) -> None:
    """Each check must catch a broken copy of a render it passed."""
    for desc, scenario, check, mutate in BREAKAGES:
        def catches(desc=desc, scenario=scenario, check=check, mutate=mutate):
            r = copy.copy(renders[scenario])
            r.docs = copy.deepcopy(r.docs)
            mutate(r.docs)
            try:
                check(r)
            except AssertionError:
                return
            raise AssertionError(f"{check.__name__} did not notice: {desc}")
        record(f"catches: {desc}", catches)
