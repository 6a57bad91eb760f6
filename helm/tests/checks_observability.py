"""Property checks on the dashboards and alerting rules the chart ships, for check.py: each takes
a Render and raises AssertionError.

The chart reads helm/hermes-cloud/files/, copies of deploy/grafana/ (deploy/grafana/check.py
validates those files and keeps the copies identical); here the rendered objects are held to
the canonical files themselves: the dashboard ConfigMap's JSON, the PrometheusRule's groups and
the rule-file ConfigMap must equal deploy/grafana's, the `up` alert's job regex aside.
"""

from __future__ import annotations

import json

import yaml

from rendering import GRAFANA, NAMESPACE, Render, labels

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


def _config_maps_with(r: Render, key: str) -> list[dict]:
    return [c for c in r.of("ConfigMap") if key in (c.get("data") or {})]


def check_dashboard_config_map(r: Render) -> None:
    """The dashboard JSON, labelled for Grafana's sidecar, in the namespace it watches."""
    g = r.values["observability"]["grafanaDashboard"]
    cms = _config_maps_with(r, DASHBOARD_KEY)
    if not g["enabled"]:
        assert not cms, "the dashboard ConfigMap is off by default"
        return
    assert len(cms) == 1, f"want one dashboard ConfigMap, found {len(cms)}"
    cm = cms[0]
    assert labels(cm).get(g["label"]) == g["labelValue"], f"the sidecar's label {g['label']}={g['labelValue']!r}"
    for k, v in g["labels"].items():
        assert labels(cm).get(k) == v, f"dashboard ConfigMap label {k}"
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
    a = r.values["observability"]["alertRulesConfigMap"]
    cms = _config_maps_with(r, RULES_KEY)
    if not a["enabled"]:
        assert not cms, "the rule-file ConfigMap is off by default"
        return
    assert len(cms) == 1, f"want one rule-file ConfigMap, found {len(cms)}"
    cm = cms[0]
    for k, v in a["labels"].items():
        assert labels(cm).get(k) == v, f"rule-file ConfigMap label {k}"
    assert cm["data"][RULES_KEY].rstrip("\n") == expected_rules_text(r).rstrip("\n"), \
        "the rule-file ConfigMap differs from deploy/grafana/alerts.yaml"


def check_observability(r: Render) -> None:
    check_dashboard_config_map(r)
    check_prometheus_rule(r)
    check_alert_rules_config_map(r)
