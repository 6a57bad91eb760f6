"""PromQL expressions for check.py: parsed by promql-parser, every metric looked up in the
catalog of what the code exports, and the labels followed through the expression: a matcher,
`by`/`without`, `on`, `group_left` or `label_replace` may only name a label that is there at that
point, and each expression's output labels are known (legends and alert templates are held to them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import promql_parser as pp

from metrics_catalog import Catalog

# What Grafana substitutes in a query: $__rate_interval becomes a marker range, so that the
# check can tell that every rate in the dashboard uses it.
RATE_INTERVAL_MARK = "3661s"
GRAFANA_VARIABLES = {"__rate_interval": RATE_INTERVAL_MARK, "__interval": "60s", "__range": "6h"}


@dataclass(frozen=True)
class Labels:
    names: frozenset
    exact: bool = False    # an aggregation fixed them: no other label can be there
    scalar: bool = False
    unknown: bool = False  # after an error below: checked no further, so one mistake is said once


SCALAR = Labels(frozenset(), True, True)
UNKNOWN = Labels(frozenset(), unknown=True)


class Query:
    """One parsed expression: its errors, range selectors and output labels."""

    def __init__(self, expr: str, catalog: Catalog, where: str, dashboard: bool):
        self.catalog, self.where, self.errors, self.ranges = catalog, where, [], []
        text = expr
        for var in sorted(set(re.findall(r"\$\{?(\w+)\}?", expr))):
            if var.isdigit():
                continue
            if not dashboard or var not in GRAFANA_VARIABLES:
                self.errors.append(f"{where}: unknown variable ${var}")
                continue
            text = re.sub(r"\$\{?" + var + r"\b\}?", GRAFANA_VARIABLES[var], text)
        try:
            ast = pp.parse(text)
        except ValueError as e:
            self.errors.append(f"{where}: PromQL does not parse: {e}: {expr!r}")
            self.out = UNKNOWN
            return
        self.out = self.visit(ast)
        if dashboard:
            for r in self.ranges:
                if r != pp.parse_duration(RATE_INTERVAL_MARK):
                    self.errors.append(f"{where}: range [{pp.display_duration(r)}]: use [$__rate_interval]")
        self.errors = list(dict.fromkeys(self.errors))  # both sides of a ratio may make one mistake

    def err(self, msg: str) -> None:
        self.errors.append(f"{self.where}: {msg}")

    def visit(self, e) -> Labels:  # noqa: C901 - one case per node type
        if isinstance(e, (pp.NumberLiteral, pp.StringLiteral)):
            return SCALAR
        if isinstance(e, (pp.ParenExpr, pp.UnaryExpr)):
            return self.visit(e.expr)
        if isinstance(e, pp.SubqueryExpr):
            return self.visit(e.expr)
        if isinstance(e, pp.MatrixSelector):
            self.ranges.append(e.range)
            return self.visit(e.vector_selector)
        if isinstance(e, pp.VectorSelector):
            return self.selector(e)
        if isinstance(e, pp.Call):
            return self.call(e)
        if isinstance(e, pp.AggregateExpr):
            return self.aggregate(e)
        if isinstance(e, pp.BinaryExpr):
            return self.binary(e)
        self.err(f"cannot follow {type(e).__name__}")
        return UNKNOWN

    def selector(self, e) -> Labels:
        matchers = list(e.matchers.matchers) + [m for group in e.matchers.or_matchers for m in group]
        name = e.name or next((m.value for m in matchers if m.name == "__name__" and m.op == pp.MatchOp.Equal), None)
        if not name:
            self.err(f"a selector without a metric name: {e}")
            return UNKNOWN
        try:
            allowed, values = self.catalog.series(name)
        except ValueError as ex:
            self.err(str(ex))
            return UNKNOWN
        for m in matchers:
            if m.name == "__name__":
                continue
            if m.name not in allowed:
                self.err(f"label {m.name!r} is not on {name} (it has {', '.join(sorted(allowed))})")
            elif m.op in (pp.MatchOp.Equal, pp.MatchOp.NotEqual) and values.get(m.name) and m.value not in values[m.name]:
                self.err(f'{name}{{{m.name}="{m.value}"}}: the code only writes {sorted(values[m.name])}')
        return Labels(frozenset(allowed))

    def call(self, e) -> Labels:
        fn = e.func.name
        args = [self.visit(a) for a in e.args]
        if any(a.unknown for a in args):
            return UNKNOWN
        if fn == "histogram_quantile":
            inner = args[1]
            if "le" not in inner.names:
                self.err("histogram_quantile needs the `le` label kept (sum by (le, ...))")
            return Labels(inner.names - {"le"}, inner.exact)
        if fn in ("label_replace", "label_join"):
            inner = args[0]
            strings = [a.val for a in e.args[1:]]
            sources = [strings[2]] if fn == "label_replace" else strings[2:]
            for src in sources:
                if src and src not in inner.names:
                    self.err(f"{fn}: source label {src!r} is not there ({', '.join(sorted(inner.names))})")
            return Labels(inner.names | {strings[0]}, inner.exact)
        if fn in ("absent", "absent_over_time"):
            sel = e.args[0].vector_selector if isinstance(e.args[0], pp.MatrixSelector) else e.args[0]
            eq = {m.name for m in getattr(getattr(sel, "matchers", None), "matchers", [])
                  if m.op == pp.MatchOp.Equal and m.name != "__name__"}
            return Labels(frozenset(eq), True)
        if fn == "vector":
            return Labels(frozenset(), True)
        if e.func.return_type == pp.ValueType.Scalar:
            return SCALAR
        return next((a for a in args if not a.scalar), Labels(frozenset(), True))

    def aggregate(self, e) -> Labels:
        inner = self.visit(e.expr)
        op = str(e.op)
        param = e.param.val if isinstance(e.param, pp.StringLiteral) else None
        if e.param is not None:
            self.visit(e.param)
        if inner.unknown:
            return UNKNOWN
        mod = e.modifier
        listed = list(mod.labels) if mod else []
        for label in listed:
            if label not in inner.names:
                way = "by" if mod.type == pp.AggModifierType.By else "without"
                self.err(f"{op} {way} ({label}): {label!r} is not a label of what it aggregates "
                         f"({', '.join(sorted(inner.names)) or 'none'})")
        if op in ("topk", "bottomk", "limitk", "limit_ratio"):
            return inner
        extra = {param} if op == "count_values" and param else set()
        if mod and mod.type == pp.AggModifierType.Without:
            return Labels(inner.names - set(listed) | extra, inner.exact)
        return Labels(frozenset(set(listed) | extra), True)

    def binary(self, e) -> Labels:
        lhs, rhs = self.visit(e.lhs), self.visit(e.rhs)
        if lhs.unknown or rhs.unknown:
            return UNKNOWN
        if lhs.scalar and rhs.scalar:
            return SCALAR
        if lhs.scalar or rhs.scalar:
            return rhs if lhs.scalar else lhs
        op = str(e.op)
        mod = e.modifier
        matching = mod.matching if mod else None
        card = mod.card if mod else None
        group = set(mod.group_labels) if mod and mod.group_labels else set()
        if matching is not None and matching.type == pp.LabelModifierType.Include:
            on = set(matching.labels)
            for side, labels in (("left", lhs), ("right", rhs)):
                for label in sorted(on - labels.names):
                    self.err(f"on({label}): {label!r} is not on the {side} side ({', '.join(sorted(labels.names)) or 'none'})")
        else:
            ignored = set(matching.labels) if matching is not None else set()
            if lhs.exact and rhs.exact and op != "or" and lhs.names - ignored != rhs.names - ignored:
                self.err(f"`{op}`: the left side keeps {sorted(lhs.names)} and the right {sorted(rhs.names)}: "
                         "nothing matches; aggregate both to the same labels or say on(...)")
        other = rhs if card == pp.VectorMatchCardinality.ManyToOne else lhs
        for label in sorted(group - other.names):
            self.err(f"group_left/right({label}): {label!r} is not on the other side")
        if op == "or":
            return Labels(lhs.names | rhs.names, lhs.exact and rhs.exact)
        if card == pp.VectorMatchCardinality.ManyToOne:
            return Labels(lhs.names | group, lhs.exact)
        if card == pp.VectorMatchCardinality.OneToMany:
            return Labels(rhs.names | group, rhs.exact)
        if op in ("and", "unless") or matching is None:
            return lhs
        if matching.type == pp.LabelModifierType.Include:
            return Labels(frozenset(matching.labels), True)
        return Labels(lhs.names - set(matching.labels), lhs.exact)


def legend_labels(text: str) -> set[str]:
    """Labels a Grafana legend names: `{{provider}}`."""
    return set(re.findall(r"\{\{\s*([a-zA-Z_]\w*)\s*\}\}", text))


def template_labels(text: str) -> set[str]:
    """Labels an alert's Go template names: `{{ $labels.provider }}`, `{{ with $labels.namespace }}`."""
    return set(re.findall(r"\$labels\.([a-zA-Z_]\w*)", text))
