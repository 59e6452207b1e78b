"""What a node shows on the canvas, derived from its spec, its params and the report.

Kept apart from painting so the same facts (title, ports, key params, parameter
count, Repeat memory growth, errors) are computed in one place and compared
cheaply: an item repaints only when its :class:`NodeDisplay` really changed.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from revstudio.core.card import count_footer, format_count, group_param_names, key_lines, memory_line
from revstudio.core.graph import Graph
from revstudio.core.plugins import why_missing
from revstudio.core.spec import registry

__all__ = ["NodeDisplay", "WireLabels", "count_footer", "format_count", "format_shape", "group_param_names",
           "node_display", "runs_groups", "with_count"]


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
    lines = key_lines(spec, params)  # (core.card: what sets the card's height, merge's too)
    info = getattr(report, "nodes", {}).get(node_id) if report is not None else None
    footer_parts = count_footer(getattr(info, "parameters", None) if info is not None else None)
    footer_parts += memory_line(spec, params, in_region)
    opens = bool(group_param_names(node.type))
    return NodeDisplay(
        spec.display_name, spec.type_id, spec.category, inputs, outputs, lines,
        footer_parts, True, opens,
    )
