"""Property checks on the dashboards, alerting rules and trace export the chart sets up, for
check.py: each takes a Render and raises AssertionError.

The chart reads helm/hermes-cloud/files/, copies of deploy/grafana/ (deploy/grafana/check.py
validates those files and keeps the copies identical); here the rendered objects are held to
the canonical files themselves: the dashboard ConfigMap's JSON, the PrometheusRule's groups and
the rule-file ConfigMap must equal deploy/grafana's, the `up` alert's job regex aside.
check_traces holds every hermesd container's trace variables to telemetry.otlp (and to what
libs/telemetry/src/otlp.rs and the OpenTelemetry SDK read).
"""

from __future__ import annotations

import json
import re

import yaml

from rendering import GRAFANA, NAMESPACE, ROLES, Render, container, env_of, labels

DASHBOARD_KEY = "hermes-overview.json"
RULES_KEY = "hermes-alerts.yaml"
UP_JOB_MARKER = 'job=~".*hermes.*"'  # what observability.upJobRegex replaces (deploy/grafana/check.py)


def expected_rules_text(r: Render) -> str:
    text = (GRAFANA / "alerts.yaml").read_text()
    regex = r.values["observability"]["upJobRegex"]
    if regex:
        assert text.count(UP_JOB_MARKER) == 1, f"deploy/grafana/alerts.yaml must hold {UP_JOB_MARKER} once"
        text = text.replace(UP_JOB_MARKER, "job=~" + json.dumps(regex))
    return text


def _config_map(r: Render, key: str, settings: dict, what: str) -> dict | None:
    """The one ConfigMap that holds `key`, with the labels its `settings` give it; None where the
    settings turn it off (and then there must be none)."""
    cms = [c for c in r.of("ConfigMap") if key in (c.get("data") or {})]
    if not settings["enabled"]:
        assert not cms, f"the {what} ConfigMap is off by default"
        return None
    assert len(cms) == 1, f"want one {what} ConfigMap, found {len(cms)}"
    cm = cms[0]
    for k, v in settings["labels"].items():
        assert labels(cm).get(k) == v, f"{what} ConfigMap label {k}"
    return cm


def check_dashboard_config_map(r: Render) -> None:
    """The dashboard JSON, labelled for Grafana's sidecar, in the namespace it watches."""
    g = r.values["observability"]["grafanaDashboard"]
    cm = _config_map(r, DASHBOARD_KEY, g, "dashboard")
    if cm is None:
        return
    assert labels(cm).get(g["label"]) == g["labelValue"], f"the sidecar's label {g['label']}={g['labelValue']!r}"
    assert (cm["metadata"].get("annotations") or {}) == g["annotations"], "dashboard ConfigMap annotations"
    assert cm["metadata"]["namespace"] == (g["namespace"] or NAMESPACE), "the dashboard's namespace"
    canonical = json.loads((GRAFANA / "hermes-overview.json").read_text())
    shipped = json.loads(cm["data"][DASHBOARD_KEY])
    assert shipped == canonical, "the dashboard ConfigMap's JSON differs from deploy/grafana/hermes-overview.json"
    assert shipped["uid"] == "hermes-overview", "the dashboard keeps its uid (Grafana updates it in place)"


def check_prometheus_rule(r: Render) -> None:
    """The rule groups of deploy/grafana/alerts.yaml, for the Prometheus Operator."""
    p = r.values["observability"]["prometheusRule"]
    rules = r.of("PrometheusRule")
    if not p["enabled"]:
        assert not rules, "the PrometheusRule is off by default"
        return
    assert len(rules) == 1, f"want one PrometheusRule, found {len(rules)}"
    pr = rules[0]
    assert pr["apiVersion"] == "monitoring.coreos.com/v1"
    assert pr["metadata"]["namespace"] == NAMESPACE
    for k, v in p["labels"].items():
        assert labels(pr).get(k) == v, f"PrometheusRule label {k} for the Prometheus' ruleSelector"
    want = yaml.safe_load(expected_rules_text(r))["groups"]
    assert pr["spec"]["groups"] == want, "the PrometheusRule's groups differ from deploy/grafana/alerts.yaml"
    up = [rule for g in pr["spec"]["groups"] for rule in g["rules"] if rule["expr"].lstrip().startswith("up{")]
    assert len(up) == 1, "one alert on up"
    regex = r.values["observability"]["upJobRegex"]
    assert (f"job=~{json.dumps(regex)}" if regex else UP_JOB_MARKER) in up[0]["expr"], "the up alert's job regex"


def check_alert_rules_config_map(r: Render) -> None:
    """The same rules as a plain Prometheus rule file."""
    cm = _config_map(r, RULES_KEY, r.values["observability"]["alertRulesConfigMap"], "rule-file")
    if cm is None:
        return
    assert cm["data"][RULES_KEY].rstrip("\n") == expected_rules_text(r).rstrip("\n"), \
        "the rule-file ConfigMap differs from deploy/grafana/alerts.yaml"


def check_observability(r: Render) -> None:
    check_dashboard_config_map(r)
    check_prometheus_rule(r)
    check_alert_rules_config_map(r)


# What the chart sets for traces; with telemetry.otlp.endpoint empty none of it may appear.
TRACE_ENV = ("HERMES__TELEMETRY__OTLP_ENDPOINT", "HERMES__TELEMETRY__OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS",
             "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_RESOURCE_ATTRIBUTES", "HERMES_POD_NAME",
             "HERMES_POD_NAMESPACE")
POD_ATTRIBUTES = {"k8s.namespace.name": "$(HERMES_POD_NAMESPACE)", "k8s.pod.name": "$(HERMES_POD_NAME)",
                  "service.instance.id": "$(HERMES_POD_NAME)"}
FIELD_REFS = {"HERMES_POD_NAME": "metadata.name", "HERMES_POD_NAMESPACE": "metadata.namespace"}


def _ratio(value) -> str:
    return "" if value == "" else str(value)


def check_traces(r: Render) -> None:
    """Every hermesd container (the four roles and the Job) exports traces as telemetry.otlp says,
    or, without an endpoint, carries none of the trace variables."""
    o = r.values["telemetry"]["otlp"]
    extra = {e["name"] for e in r.values["extraEnv"]} | {e["name"] for role in ROLES for e in r.values[role]["extraEnv"]}
    seen = set()
    for role, pod in r.hermes_pods():
        seen.add(role)
        env_list = container(pod).get("env", [])
        env = env_of(container(pod))
        if not o["endpoint"]:
            stray = [n for n in TRACE_ENV if n in env and n not in extra]
            assert not stray, f"{role}: {stray} without telemetry.otlp.endpoint"
            continue
        assert env.get("HERMES__TELEMETRY__OTLP_ENDPOINT", {}).get("value") == o["endpoint"], f"{role}: the OTLP endpoint"
        assert env.get("HERMES__TELEMETRY__OTLP_PROTOCOL", {}).get("value") == o["protocol"], f"{role}: the OTLP protocol"
        assert o["protocol"] in ("grpc", "http/protobuf"), "hermesd reads grpc or http/protobuf only"
        h = o["headers"]
        if h["existingSecret"]:
            e = env.get("OTEL_EXPORTER_OTLP_HEADERS")
            assert e and "value" not in e, f"{role}: OTEL_EXPORTER_OTLP_HEADERS must come from a Secret, not a value"
            assert e["valueFrom"] == {"secretKeyRef": {"name": h["existingSecret"], "key": h["key"]}}, \
                f"{role}: headers from {e['valueFrom']}"
        else:
            assert "OTEL_EXPORTER_OTLP_HEADERS" not in env, f"{role}: headers without telemetry.otlp.headers"
        for var, want in (("OTEL_TRACES_SAMPLER", o["sampler"]), ("OTEL_TRACES_SAMPLER_ARG", _ratio(o["samplerArg"]))):
            if want:
                assert env.get(var, {}).get("value") == want, f"{role}: {var}={env.get(var)}, want {want!r}"
            else:
                assert var not in env, f"{role}: {var} set without telemetry.otlp"
        for var, path in FIELD_REFS.items():
            assert env.get(var, {}).get("valueFrom") == {"fieldRef": {"fieldPath": path}}, f"{role}: {var} from {path}"
        attrs_var = env.get("OTEL_RESOURCE_ATTRIBUTES", {}).get("value")
        assert attrs_var, f"{role}: OTEL_RESOURCE_ATTRIBUTES"
        pairs = [kv.split("=", 1) for kv in attrs_var.split(",")]
        assert all(len(p) == 2 for p in pairs), f"{role}: OTEL_RESOURCE_ATTRIBUTES {attrs_var!r} is not key=value,..."
        attrs = dict(pairs)
        assert len(attrs) == len(pairs), f"{role}: an attribute twice in {attrs_var!r}"
        assert attrs == {**POD_ATTRIBUTES, **{k: str(v) for k, v in o["resourceAttributes"].items()}}, \
            f"{role}: OTEL_RESOURCE_ATTRIBUTES {attrs}"
        # hermesd names each role's service (hermes-api, ...): neither variable may name one for all.
        assert "service.name" not in attrs and "OTEL_SERVICE_NAME" not in env.keys() - extra, f"{role}: a service.name"
        # Kubernetes expands $(VAR) only for variables defined earlier in the list.
        names = [e["name"] for e in env_list]
        at = names.index("OTEL_RESOURCE_ATTRIBUTES")
        for ref in re.findall(r"\$\((\w+)\)", attrs_var):
            assert ref in names[:at], f"{role}: OTEL_RESOURCE_ATTRIBUTES uses $({ref}) before it is defined"
    want = {role for role in ROLES if r.values[role]["enabled"]} | ({"migrate"} if r.values["migrations"]["enabled"] else set())
    assert seen == want, f"checked {sorted(seen)}, want every hermesd container {sorted(want)}"
    if o["endpoint"]:
        assert o["endpoint"] in r.notes, "NOTES.txt names where traces go"
