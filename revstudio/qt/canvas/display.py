"""What a node shows on the canvas, derived from its spec, its params and the report.

Kept apart from painting so the same facts (title, ports, key params, parameter
count, Repeat memory growth, errors) are computed in one place and compared
cheaply: an item repaints only when its :class:`NodeDisplay` really changed.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from revstudio.core.graph import Graph
from revstudio.core.params import to_json
from revstudio.core.plugins import why_missing
from revstudio.core.spec import registry


@dataclass(frozen=True)
class NodeDisplay:
    title: str
    type_id: str
    category: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    lines: tuple[str, ...]          # key params, "name: value"
    footer: tuple[str, ...]         # parameter count and, for Repeat, memory growth
    known_type: bool
    opens_group: bool               # Group/Repeat-like: double-click opens the body


def format_count(n: int) -> str:
    """1234 -> '1.2k', the way model summaries print parameter counts."""
    if n < 1000:
        return str(n)
    for div, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= div:
            value = n / div
            return f"{value:.1f}{suffix}" if value < 100 else f"{value:.0f}{suffix}"
    return str(n)  # pragma: no cover


def format_shape(shape: Any) -> str:
    """(8, 16, 16) -> '8x16x16' (the batch dimension is never part of a shape)."""
    if shape is None:
        return ""
    try:
        return "x".join(str(int(d)) for d in shape)
    except (TypeError, ValueError):
        return str(shape)


class WireLabels:
    """The shape label of each wire, by its output port, from one report: an edit's re-check
    relabels every wire (1,306 at 1,000 nodes), and a shape's text is made once per report."""

    def __init__(self, report: Any) -> None:
        self.report = report
        self._texts: dict[Any, str] = {}

    def of(self, port: Any) -> str:
        """``format_shape`` of the shape at ``port`` ("" where the report has none)."""
        if self.report is None:
            return ""
        try:
            shape = self.report.shape(port)
        except Exception:  # an older/partial report: no shape rather than a crash
            return ""
        try:
            text = self._texts.get(shape)
        except TypeError:  # (a shape that is not a tuple: not kept)
            return format_shape(shape)
        if text is None:
            text = self._texts[shape] = format_shape(shape)
        return text


_RUNS_GROUPS: dict[int, tuple[Any, bool]] = {}  # id(spec) -> (spec, whether it has group params)


def runs_groups(spec: Any) -> bool:
    """Whether nodes of ``spec`` run group bodies (a param of kind 'group': Group, Repeat, couplings);
    asked for every card after every edit, so kept per spec."""
    kept = _RUNS_GROUPS.get(id(spec))
    if kept is None or kept[0] is not spec:
        kept = _RUNS_GROUPS[id(spec)] = (spec, any(getattr(p, "kind", "") == "group" for p in spec.params.values()))
    return kept[1]


def _value_text(value: Any) -> str:
    value = to_json(value)
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    text = str(value)
    return text if len(text) <= 18 else text[:17] + "…"


def group_param_names(type_id: str) -> tuple[str, ...]:
    """Params of kind 'group' on a type: they name sub-graphs (Group/Repeat/couplings)."""
    spec = registry.find(type_id)
    if spec is None:
        return ()
    return tuple(name for name, p in spec.params.items() if getattr(p, "kind", "") == "group")


def count_footer(count: Any) -> tuple[str, ...]:
    """The footer line of a parameter count (none where the count is unknown or zero)."""
    return (f"{format_count(count)} params",) if isinstance(count, int) and count > 0 else ()


def with_count(display: NodeDisplay, count: Any) -> NodeDisplay:
    """``display`` with another parameter count: what a re-check changes on the card of a node
    whose type and params it was drawn from (a type with group params, whose footer says more
    and whose ports follow its bodies, is drawn anew with :func:`node_display`)."""
    return replace(display, footer=count_footer(count))


def node_display(graph: Graph, node_id: str, report: Any, in_region: bool) -> NodeDisplay:
    node = graph.node(node_id)
    spec = registry.find(node.type)
    inputs, outputs = graph.ports(node_id)
    if spec is None:
        # A type whose plugin is not installed keeps its params and wires; say what to install.
        record = getattr(graph, "plugins", {}).get(node.type) or {}
        dist = record.get("distribution")
        # installed but failing to load it: "missing" would send the user to pip install it
        state = "missing plugin:"
        if isinstance(dist, str) and why_missing(dist, node.type):
            state = "broken plugin:"
        elif isinstance(dist, str) and registry.installed(dist)[0] is not None:
            state = "not in plugin:"  # it loads, but no longer declares this type (renamed?)
        lines: tuple[str, ...] = (state, str(dist)) if dist else ("unknown node type",)
        return NodeDisplay(node.type, node.type, "missing" if dist else "unknown", inputs, outputs, lines, (),
                           False, False)
    params = graph.resolved_params(node_id)
    # empty values (an unnamed Output) say nothing, so they take no line
    lines = tuple(f"{k}: {_value_text(params[k])}" for k in spec.key_params
                  if k in params and params[k] not in ("", None, ()))
    info = getattr(report, "nodes", {}).get(node_id) if report is not None else None
    footer_parts = list(count_footer(getattr(info, "parameters", None) if info is not None else None))
    if "times" in spec.params and group_param_names(node.type):
        # A Repeat's activation memory is flat when its body runs reversibly, linear otherwise.
        times = params.get("times")
        growth = "flat (reversible)" if in_region else f"linear (x{times})"
        footer_parts.append(f"memory: {growth}")
    opens = bool(group_param_names(node.type))
    return NodeDisplay(
        spec.display_name, spec.type_id, spec.category, inputs, outputs, lines,
        tuple(footer_parts), True, opens,
    )
