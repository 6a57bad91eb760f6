#!/usr/bin/env python3
"""Offline check of the Grafana dashboard and the Prometheus alert rules in deploy/grafana/.

  hermes-overview.json  uid, title, schemaVersion 39, the `datasource` variable (Prometheus);
                        every panel a type, a gridPos inside the 24 columns and not overlapping
                        another, the variable as its datasource, a unit, targets with a non-empty
                        expr; no duplicate panel ids; rates over [$__rate_interval]; legends name
                        labels the query keeps.
  alerts.yaml           a plain Prometheus rule file: groups -> rules, no unknown keys, unique
                        names, `for` a Prometheus duration, labels.severity warning|critical,
                        annotations.summary and .description, `{{ $labels.x }}` only for labels
                        the expression keeps.
  every expression      parsed by promql-parser (PyPI, Python bindings of the Rust crate; it
                        knows every PromQL function and its argument types). Each metric must be
                        one the Rust code exports: the `counter!`/`histogram!`/`gauge!` calls in
                        services/ and libs/ (the `_sum`/`_count`/`_bucket` series of a histogram
                        as the exporter renders it, see `histogram_exposition`; `up` is
                        Prometheus's own), and each label in a matcher, `by`/`without`, `on`,
                        `group_left` or a legend must exist on what it applies to: the metric's
                        `"label" =>` pairs, `le`/`quantile` of histograms, and the target labels
                        in TARGET_LABELS. Label values are checked where every call site writes
                        a literal. Two sides of a binary operator aggregated to different labels
                        never match: that is refused too.
  the chart's copies    helm/hermes-cloud/files/ holds byte-identical copies (a chart cannot read
                        files outside its directory).

Then each kind of mistake is made on purpose in a copy held in memory (a wrong metric, a wrong
label, a bad duration, ...) and must be caught: the check shows it can fail.

The work is split: metrics_catalog.py reads the Rust code, promql_labels.py follows metrics and
labels through each expression; this file checks the two files and runs everything (counted by
deploy/dev/tally.py, as helm/tests/check.py is).

Deps: Python 3.11, pyyaml, promql-parser==0.12.0.
Usage: python3 deploy/grafana/check.py [-v]. Exit status 1 on any failure.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from importlib import metadata
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ next to the dashboard
sys.path.insert(1, str(Path(__file__).resolve().parents[2] / "deploy/dev"))  # tally.py, shared with helm/tests

import yaml  # noqa: E402

try:
    import promql_parser as pp  # noqa: E402
except ImportError:
    sys.exit("deploy/grafana/check.py needs promql-parser: python3 -m pip install promql-parser==0.12.0")

from metrics_catalog import REPO, Catalog, load_catalog  # noqa: E402
from promql_labels import Query, legend_labels, template_labels  # noqa: E402
from tally import Tally  # noqa: E402

HERE = Path(__file__).resolve().parent
DASHBOARD = HERE / "hermes-overview.json"
ALERTS = HERE / "alerts.yaml"
CHART_FILES = REPO / "helm/hermes-cloud/files"

DASHBOARD_UID = "hermes-overview"
SCHEMA_VERSION = 39
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# Grafana unit ids the dashboard may use; anything else is most likely a typo ("sec", "ops/s").
UNITS = {"s", "ms", "ops", "short", "percentunit", "none"}
# Panels that show text or group others and query nothing.
NO_QUERY_PANELS = {"row", "text"}
SEVERITIES = {"warning", "critical"}
# The HermesRoleDown alert's job matcher. The chart replaces exactly this text with
# observability.upJobRegex, so it must stay as it is and appear once.
UP_JOB_MARKER = 'job=~".*hermes.*"'

DURATION = re.compile(r"^(?!$)(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?$")


def parsed(expr, catalog: Catalog, where: str, errors: list[str], dashboard: bool, missing: str) -> Query | None:
    """A panel target's or a rule's expression followed through the catalog, its errors added to
    `errors`; None, with `missing` as the error, where there is no expression to check."""
    if not (isinstance(expr, str) and expr.strip()):
        errors.append(f"{where}: {missing}")
        return None
    q = Query(expr, catalog, where, dashboard=dashboard)
    errors.extend(q.errors)
    return q


# --- the dashboard ------------------------------------------------------------------------------

def all_panels(dash: dict) -> list[dict]:
    out = []
    for p in dash.get("panels") or []:
        out.append(p)
        out.extend(p.get("panels") or [])  # a collapsed row holds its panels
    return out


def check_dashboard(dash: dict, catalog: Catalog) -> tuple[list[str], int]:
    """Errors, and how many panels were checked."""
    errors: list[str] = []
    need = errors.append
    if dash.get("uid") != DASHBOARD_UID:
        need(f"dashboard: uid must be {DASHBOARD_UID!r}, not {dash.get('uid')!r}")
    if not (isinstance(dash.get("title"), str) and dash["title"].strip()):
        need("dashboard: a title is required")
    if dash.get("schemaVersion") != SCHEMA_VERSION:
        need(f"dashboard: schemaVersion must be {SCHEMA_VERSION}")
    variables = {v.get("name"): v for v in (dash.get("templating") or {}).get("list", [])}
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        need("dashboard: needs a template variable `datasource` of type datasource, query prometheus")
    panels = all_panels(dash)
    if not panels:
        need("dashboard: no panels")
    seen: dict = {}
    for p in panels:
        pid = p.get("id")
        where = f"panel {pid} {p.get('title', '')!r}"
        if not isinstance(pid, int):
            need(f"{where}: id must be an integer")
        elif pid in seen:
            need(f"{where}: duplicate panel id (also {seen[pid]!r})")
        seen.setdefault(pid, p.get("title", ""))
        if not (isinstance(p.get("type"), str) and p["type"]):
            need(f"{where}: no type")
        g = p.get("gridPos") or {}
        if not all(isinstance(g.get(k), int) for k in ("h", "w", "x", "y")):
            need(f"{where}: gridPos needs integer h, w, x, y")
        elif not (g["h"] > 0 and 0 < g["w"] and g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["y"] >= 0):
            need(f"{where}: gridPos {g} is outside the 24 columns")
        if p.get("type") in NO_QUERY_PANELS:
            continue
        if p.get("datasource") != DATASOURCE:
            need(f"{where}: datasource must be {DATASOURCE} (the variable)")
        unit = ((p.get("fieldConfig") or {}).get("defaults") or {}).get("unit")
        if unit not in UNITS:
            need(f"{where}: fieldConfig.defaults.unit {unit!r} is not one of {sorted(UNITS)}")
        targets = p.get("targets") or []
        if not targets:
            need(f"{where}: no targets")
        refs = [t.get("refId") for t in targets]
        if len(set(refs)) != len(refs) or not all(refs):
            need(f"{where}: every target needs its own refId")
        for t in targets:
            tw = f"{where} target {t.get('refId')}"
            if t.get("datasource", DATASOURCE) != DATASOURCE:
                need(f"{tw}: datasource must be {DATASOURCE}")
            q = parsed(t.get("expr"), catalog, tw, errors, dashboard=True, missing="empty expr")
            if q is None:
                continue
            for label in sorted(legend_labels(t.get("legendFormat", "")) - q.out.names if not q.out.unknown else ()):
                need(f"{tw}: the legend names {label!r}, which the query does not keep ({sorted(q.out.names)})")
    top = [p for p in dash.get("panels") or [] if isinstance(p.get("gridPos"), dict)]
    for i, a in enumerate(top):
        for b in top[i + 1:]:
            ga, gb = a["gridPos"], b["gridPos"]
            try:
                if ga["x"] < gb["x"] + gb["w"] and gb["x"] < ga["x"] + ga["w"] and ga["y"] < gb["y"] + gb["h"] and gb["y"] < ga["y"] + ga["h"]:
                    need(f"panel {a.get('id')} and panel {b.get('id')} overlap")
            except (KeyError, TypeError):
                pass
    return errors, len(panels)


# --- the rule file --------------------------------------------------------------------------------

GROUP_KEYS = {"name", "interval", "limit", "rules", "query_offset", "labels"}
RULE_KEYS = {"alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"}


def duration_ok(value) -> bool:
    if not isinstance(value, str) or not DURATION.match(value):
        return False
    try:
        pp.parse_duration(value)
    except ValueError:
        return False
    return True


def check_rules(doc, text: str, catalog: Catalog) -> tuple[list[str], int]:
    """Errors, and how many rules were checked."""
    errors: list[str] = []
    need = errors.append
    if not isinstance(doc, dict) or set(doc) != {"groups"} or not isinstance(doc["groups"], list) or not doc["groups"]:
        return ["alerts: the file must be `groups:` with a non-empty list, and nothing else"], 0
    names: set[str] = set()
    groups: set[str] = set()
    count = 0
    for g in doc["groups"]:
        gname = g.get("name") if isinstance(g, dict) else None
        where = f"group {gname!r}"
        if not isinstance(gname, str) or not gname:
            need("alerts: a group without a name")
            continue
        if gname in groups:
            need(f"{where}: duplicate group name")
        groups.add(gname)
        for k in sorted(set(g) - GROUP_KEYS):
            need(f"{where}: unknown key {k!r}")
        if "interval" in g and not duration_ok(g["interval"]):
            need(f"{where}: interval {g['interval']!r} is not a Prometheus duration")
        if not isinstance(g.get("rules"), list) or not g["rules"]:
            need(f"{where}: no rules")
            continue
        for rule in g["rules"]:
            count += 1
            name = rule.get("alert") or rule.get("record") if isinstance(rule, dict) else None
            rw = f"{where} rule {name!r}"
            if not isinstance(rule, dict) or ("alert" in rule) == ("record" in rule):
                need(f"{rw}: a rule is either `alert:` or `record:`")
                continue
            for k in sorted(set(rule) - RULE_KEYS):
                need(f"{rw}: unknown key {k!r}")
            if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_:]*", str(name)):
                need(f"{rw}: not a valid name")
            if name in names:
                need(f"{rw}: duplicate name")
            names.add(name)
            q = parsed(rule.get("expr"), catalog, rw, errors, dashboard=False, missing="expr is required")
            if q is None:
                continue
            if "record" in rule:
                continue
            for key in ("for", "keep_firing_for"):
                if key == "for" and key not in rule:
                    need(f"{rw}: `for` is required")
                elif key in rule and not duration_ok(rule[key]):
                    need(f"{rw}: {key} {rule[key]!r} is not a Prometheus duration (like 5m, 1h30m)")
            labels, annotations = rule.get("labels") or {}, rule.get("annotations") or {}
            if labels.get("severity") not in SEVERITIES:
                need(f"{rw}: labels.severity must be one of {sorted(SEVERITIES)}, not {labels.get('severity')!r}")
            for key in ("summary", "description"):
                if not (isinstance(annotations.get(key), str) and annotations[key].strip()):
                    need(f"{rw}: annotations.{key} is required")
            for k, v in {**labels, **annotations}.items():
                if not isinstance(v, str):
                    need(f"{rw}: {k} must be a string")
                    continue
                for label in sorted(template_labels(v) - q.out.names if not q.out.unknown else ()):
                    need(f"{rw}: {k} names $labels.{label}, which the expression does not keep ({sorted(q.out.names)})")
    if text.count(UP_JOB_MARKER) != 1:
        need(f"alerts: `{UP_JOB_MARKER}` must appear exactly once (the up alert; the chart's "
             "observability.upJobRegex replaces it)")
    return errors, count


# --- the chart's copies ---------------------------------------------------------------------------

def check_copies(pairs: list[tuple[Path, bytes, Path]]) -> list[str]:
    errors = []
    for canonical, data, copy_path in pairs:
        rel, crel = canonical.relative_to(REPO), copy_path.relative_to(REPO)
        if not copy_path.is_file():
            errors.append(f"{crel} is missing: cp {rel} {crel}")
        elif copy_path.read_bytes() != data:
            errors.append(f"{crel} differs from {rel}: cp {rel} {crel}")
    return errors


# --- driver -----------------------------------------------------------------------------------------

def run_all(dash: dict, rules, rules_text: str, catalog: Catalog) -> list[str]:
    return check_dashboard(dash, catalog)[0] + check_rules(rules, rules_text, catalog)[0]


def _expr_of(dash: dict, contains: str) -> dict:
    return next(t for p in all_panels(dash) for t in p.get("targets", []) if contains in t.get("expr", ""))


def _rule(rules: dict, alert: str) -> dict:
    return next(r for g in rules["groups"] for r in g["rules"] if r.get("alert") == alert)


def _replace_expr(target: dict, old: str, new: str) -> None:
    assert old in target["expr"], f"self-check setup: {old!r} not in {target['expr']!r}"
    target["expr"] = target["expr"].replace(old, new)


# Mistakes made on purpose; each must be reported with the text named (any one of them).
BREAKAGES = [
    ("a metric the code does not export", ["is not exported"],
     lambda d, r: _replace_expr(_expr_of(d, "hermes_turns_queued_oldest_seconds"), "hermes_turns_queued_oldest_seconds",
                                "hermes_turns_queued_oldest")),
    ("a label the metric does not have (by)", ["is not a label of what it aggregates"],
     lambda d, r: _replace_expr(_expr_of(d, "hermes_tool_seconds_count"), "by (tool", "by (tenant")),
    ("a label the metric does not have (matcher)", ["is not on hermes_turn_phase_seconds"],
     lambda d, r: _replace_expr(_expr_of(d, 'phase="pickup"'), 'phase="pickup"', 'stage="pickup"')),
    ("a label value the code never writes", ["the code only writes"],
     lambda d, r: _replace_expr(_expr_of(d, "hermes_sandbox_created_total"), "hermes_sandbox_created_total",
                                'hermes_sandbox_created_total{backend="podman"}')),
    ("a metric in an alert the code does not export", ["is not exported"],
     lambda d, r: _rule(r, "HermesOutboxLagging").update(expr="max by (namespace) (hermes_outbox_age_seconds) > 300")),
    ("a label in an alert the metric does not have", ["is not a label of what it aggregates"],
     lambda d, r: _rule(r, "HermesTurnQueueBackingUp").update(
         expr="max by (namespace, tenant) (hermes_turns_queued_oldest_seconds) > 60")),
    ("sides aggregated to different labels", ["nothing matches"],
     lambda d, r: _rule(r, "HermesWorkersNotConsuming").update(
         expr="max by (namespace) (hermes_turns_queued) > 0 and max (hermes_turns_running) == 0")),
    ("a summary queried for buckets", ["has no _bucket series", "needs the `le` label"],
     lambda d, r: _expr_of(d, "hermes_turn_seconds").update(
         expr="histogram_quantile(0.99, sum by (status) (rate(hermes_turn_seconds_bucket[$__rate_interval])))")),
    ("PromQL that does not parse", ["does not parse"],
     lambda d, r: _rule(r, "HermesCronJobsLate").update(expr="max by (namespace) (hermes_cron_jobs_late > 0")),
    ("a fixed range in the dashboard", ["use [$__rate_interval]"],
     lambda d, r: _replace_expr(_expr_of(d, "hermes_api_idempotent_replays_total"), "$__rate_interval", "5m")),
    ("a legend naming a label the query drops", ["the legend names"],
     lambda d, r: _expr_of(d, "hermes_api_rate_limited_total").update(legendFormat="{{tenant}}")),
    ("`for` that is not a duration", ["is not a Prometheus duration"],
     lambda d, r: _rule(r, "HermesTurnQueueBackingUp").update({"for": "5 minutes"})),
    ("a severity nobody routes", ["labels.severity"],
     lambda d, r: _rule(r, "HermesRoleDown")["labels"].update(severity="page")),
    ("an alert without a description", ["annotations.description is required"],
     lambda d, r: _rule(r, "HermesRoleDown")["annotations"].pop("description")),
    ("an annotation naming a label the alert drops", ["which the expression does not keep"],
     lambda d, r: _rule(r, "HermesTurnQueueBackingUp")["annotations"].update(summary="{{ $labels.provider }}")),
    ("a duplicate panel id", ["duplicate panel id"],
     lambda d, r: all_panels(d)[2].update(id=all_panels(d)[1]["id"])),
    ("a panel on a fixed datasource", ["datasource must be"],
     lambda d, r: next(p for p in all_panels(d) if p["type"] != "row").update(datasource={"type": "prometheus", "uid": "P1"})),
    ("a panel without gridPos", ["gridPos needs"],
     lambda d, r: next(p for p in all_panels(d) if p["type"] != "row").pop("gridPos")),
    ("a target with an empty expr", ["empty expr"],
     lambda d, r: next(p for p in all_panels(d) if p["type"] != "row")["targets"][0].update(expr="")),
    ("a wrong uid", ["uid must be"], lambda d, r: d.update(uid="hermes")),
]


def self_check(dash: dict, rules: dict, rules_text: str, catalog: Catalog, record) -> None:
    for desc, expect, mutate in BREAKAGES:
        def catches(desc=desc, expect=expect, mutate=mutate):
            d, r = copy.deepcopy(dash), copy.deepcopy(rules)
            mutate(d, r)
            errors = run_all(d, r, rules_text, catalog)
            assert any(e in msg for msg in errors for e in expect), \
                f"not caught: {desc} (wanted {expect}; got {errors or 'no error'})"
        record(f"catches: {desc}", catches)

    def copy_differs():
        other = REPO / "helm/hermes-cloud/values.yaml"
        errors = check_copies([(DASHBOARD, DASHBOARD.read_bytes() + b" ", CHART_FILES / DASHBOARD.name),
                               (ALERTS, ALERTS.read_bytes(), other)])
        assert len(errors) == 2 and all("differs" in e for e in errors), f"copies: {errors}"
    record("catches: a chart copy that differs", copy_differs)

    def marker_missing():
        errors = check_rules(rules, rules_text.replace(UP_JOB_MARKER, 'job="hermes"'), catalog)[0]
        assert any(UP_JOB_MARKER in e for e in errors), "the up alert's job marker is not checked"
    record("catches: the up alert's job matcher changed", marker_missing)


def main() -> int:
    tally = Tally()
    record = tally.record

    def report(name: str, errors: list[str]) -> None:
        def fn():
            assert not errors, ("\n      ".join([""] + errors))
        record(name, fn)

    catalog, problems, notes = load_catalog()
    print(f"== promql-parser {metadata.version('promql-parser')}; {len(catalog.exports)} metrics in services/ and "
          f"libs/; histogram! metrics rendered as Prometheus {catalog.mode} type")
    for note in notes:
        print(f"note  {note}")
    report("the Rust code's metrics can be read", problems)

    dash_text, rules_text = DASHBOARD.read_text(), ALERTS.read_text()
    try:
        dash = json.loads(dash_text)
    except json.JSONDecodeError as e:
        print(f"FAIL  {DASHBOARD.name} is not JSON: {e}")
        return 1
    try:
        rules = yaml.safe_load(rules_text)
    except yaml.YAMLError as e:
        print(f"FAIL  {ALERTS.name} is not YAML: {e}")
        return 1
    errors, panels = check_dashboard(dash, catalog)
    report(f"dashboard {DASHBOARD.name} ({panels} panels)", errors)
    errors, count = check_rules(rules, rules_text, catalog)
    report(f"rules {ALERTS.name} ({count} rules)", errors)
    report("the chart's copies in helm/hermes-cloud/files/",
           check_copies([(p, p.read_bytes(), CHART_FILES / p.name) for p in (DASHBOARD, ALERTS)]))
    if not tally.failed:  # mistakes are made on a copy that passes
        self_check(dash, rules, rules_text, catalog, record)
    return tally.summary("dashboards and alerts")


if __name__ == "__main__":
    sys.exit(main())
