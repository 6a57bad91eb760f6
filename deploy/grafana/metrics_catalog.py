"""What the Rust code exports, for check.py: every `counter!`, `histogram!` and `gauge!` call in
services/ and libs/ (multi-line calls included), with the labels of its `"label" => value` pairs
and, where every call site writes a literal, the label's values; and how the exporter renders
`histogram!` metrics (summaries without configured buckets: `name{quantile}`, `_sum`, `_count`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
SOURCES = [REPO / "services", REPO / "libs"]

# Metrics a dashboard may use before the code exports them (a change landing in two steps),
# with their labels; once the scan finds a metric with all of them, the check says the entry
# can go. Empty: everything used is exported.
BEING_ADDED: dict[str, tuple[str, set[str]]] = {}
# Labels Prometheus attaches to every scraped series (job, instance), plus `namespace`, which the
# Prometheus Operator (ServiceMonitor) and the usual kubernetes_sd relabelling add. Where a setup
# has no `namespace`, `by (namespace)` simply groups everything into one series.
TARGET_LABELS = {"job", "instance", "namespace"}
# Prometheus's own series: `up` has only the target labels.
PROMETHEUS_METRICS = {"up"}
# metrics-exporter-prometheus renders a histogram without buckets as a summary with these
# quantiles (its default; `set_quantiles` would change them).
SUMMARY_QUANTILES = {"0", "0.5", "0.9", "0.95", "0.99", "0.999", "1"}


@dataclass
class Export:
    kind: str                                   # counter | gauge | histogram
    labels: set[str] = field(default_factory=set)
    # label -> the literal values the code writes; None once any call site passes a variable.
    values: dict[str, set[str] | None] = field(default_factory=dict)
    sites: list[str] = field(default_factory=list)


MACRO = re.compile(r"\b(counter|histogram|gauge)!\s*\(")


def _call_args(text: str, start: int) -> str:
    """The text between `(` (just before `start`) and its matching `)`, skipping strings."""
    depth, i = 1, start
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return text[start:i]
        i += 1
    return text[start:]


def _split_top(args: str) -> list[str]:
    """Splits macro arguments at top-level commas."""
    parts, depth, cur, in_str, i = [], 0, [], False, 0
    while i < len(args):
        c = args[i]
        if in_str:
            if c == "\\":
                cur.append(args[i:i + 2])
                i += 2
                continue
            in_str = c != '"'
        elif c == '"':
            in_str = True
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def scan_exports(roots: list[Path] = SOURCES) -> tuple[dict[str, Export], list[str]]:
    """Every metric a `counter!`/`histogram!`/`gauge!` call in the Rust sources names, with the
    labels of its `"label" => value` pairs; and the problems met (a name that is not a literal,
    one name used as two kinds)."""
    exports: dict[str, Export] = {}
    problems: list[str] = []
    for root in roots:
        for path in sorted(root.rglob("*.rs")):
            lines = path.read_text().splitlines()
            text = "\n".join("" if ln.lstrip().startswith("//") else ln for ln in lines)
            for m in MACRO.finditer(text):
                where = f"{path.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}"
                args = _split_top(_call_args(text, m.end()))
                name = re.fullmatch(r'"([a-zA-Z_:][a-zA-Z0-9_:]*)"', args[0]) if args else None
                if not name:
                    problems.append(f"{where}: {m.group(1)}! without a literal metric name; this check cannot follow it")
                    continue
                e = exports.setdefault(name.group(1), Export(m.group(1)))
                if e.kind != m.group(1):
                    problems.append(f"{where}: {name.group(1)} is a {m.group(1)} here and a {e.kind} at {e.sites[0]}")
                e.sites.append(where)
                for arg in args[1:]:
                    pair = re.fullmatch(r'"([a-zA-Z_][a-zA-Z0-9_]*)"\s*=>\s*(.+)', arg, re.S)
                    if not pair:
                        problems.append(f"{where}: cannot read the label argument `{arg}`")
                        continue
                    label, value = pair.groups()
                    e.labels.add(label)
                    literal = re.fullmatch(r'"([^"\\]*)"', value.strip())
                    if literal and e.values.get(label, set()) is not None:
                        e.values.setdefault(label, set()).add(literal.group(1))
                    else:
                        e.values[label] = None
    return exports, problems


def histogram_exposition(roots: list[Path] = SOURCES) -> tuple[str, set[str]]:
    """How the Prometheus exporter renders `histogram!` metrics: ("summary", names rendered as
    histograms) when no global buckets are set, else ("histogram", set()). Without buckets,
    metrics-exporter-prometheus writes a summary: `name{quantile=...}`, `_sum`, `_count`."""
    src = "\n".join(p.read_text() for r in roots for p in r.rglob("*.rs") if "PrometheusBuilder" in p.read_text())
    if re.search(r"\.set_buckets\s*\(", src):
        return "histogram", set()
    per_metric = set(re.findall(r'set_buckets_for_metric\s*\(\s*Matcher::Full\(\s*"([^"]+)"', src))
    return "summary", per_metric


def custom_quantiles(roots: list[Path] = SOURCES) -> bool:
    return any("set_quantiles" in p.read_text() for r in roots for p in r.rglob("*.rs"))


@dataclass
class Catalog:
    exports: dict[str, Export]
    mode: str                 # how histograms are rendered: summary | histogram
    bucketed: set[str]        # histograms rendered with buckets although the mode is summary
    quantiles_known: bool = True

    def series(self, name: str) -> tuple[set[str], dict[str, set[str] | None]]:
        """The labels a series can carry and the closed value sets; raises ValueError."""
        if name in PROMETHEUS_METRICS:
            return set(TARGET_LABELS), {}
        for suffix in ("", "_bucket", "_sum", "_count"):
            base = name[: len(name) - len(suffix)] if suffix else name
            e = self.exports.get(base)
            if not e or not name.endswith(suffix):
                continue
            labels = e.labels | TARGET_LABELS
            if e.kind != "histogram":
                if suffix:
                    continue
                return labels, e.values
            bucketed = self.mode == "histogram" or base in self.bucketed
            if suffix == "":
                if bucketed:
                    raise ValueError(f"{name} is a histogram: query {name}_bucket, _sum or _count")
                values = dict(e.values)
                values["quantile"] = SUMMARY_QUANTILES if self.quantiles_known else None
                return labels | {"quantile"}, values
            if suffix == "_bucket":
                if not bucketed:
                    raise ValueError(f"{name}: {base} is rendered as a summary (libs/telemetry sets no histogram "
                                     f"buckets), which has no _bucket series: use {base}{{quantile=\"0.99\"}} or _sum/_count")
                return labels | {"le"}, e.values
            return labels, e.values
        raise ValueError(f"{name} is not exported by any counter!/histogram!/gauge! in services/ or libs/")


def load_catalog() -> tuple[Catalog, list[str], list[str]]:
    """The catalog, with problems (errors) and notes (the allow-list entries the code has caught up with)."""
    exports, problems = scan_exports()
    notes = []
    for name, (kind, labels) in BEING_ADDED.items():
        found = exports.get(name)
        if found and found.kind == kind and labels <= found.labels:
            notes.append(f"{name} is exported with {sorted(labels)} now ({found.sites[0]}): its BEING_ADDED entry can go")
            continue
        e = exports.setdefault(name, Export(kind, sites=["BEING_ADDED"]))
        for label in labels - e.labels:
            e.labels.add(label)
            e.values[label] = None
    mode, bucketed = histogram_exposition()
    return Catalog(exports, mode, bucketed, not custom_quantiles()), problems, notes
