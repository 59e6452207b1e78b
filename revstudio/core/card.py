"""A node's card on the canvas, measured without Qt: its size and the text lines that set it.

The canvas draws a card ``WIDTH`` wide whose height grows with its ports (one row per port on
its busier side) and its text lines (key params, then the parameter count and a Repeat's memory
growth). The canvas's ``NodeItem`` and ``revstudio merge``, which sets the other branch's new
nodes clear of this branch's, both take the size from here, so the two never disagree.
"""
from __future__ import annotations

from typing import Any

from .graph import Graph
from .params import to_json

WIDTH = 164.0   # a card's width (positions are its top-left corner)
HEADER = 24.0   # its coloured header: the title and the id
ROW = 18.0      # a port's row
LINE = 15.0     # a text line below the ports
PAD = 6.0       # above the ports and below the last line


def card_height(inputs: int, outputs: int, lines: int) -> float:
    """The height of a card with so many input and output ports and text lines."""
    return HEADER + PAD + max(inputs, outputs, 1) * ROW + lines * LINE + PAD


def format_count(n: int) -> str:
    """1234 -> '1.2k', the way model summaries print parameter counts."""
    if n < 1000:
        return str(n)
    for div, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= div:
            value = n / div
            return f"{value:.1f}{suffix}" if value < 100 else f"{value:.0f}{suffix}"
    return str(n)  # pragma: no cover


def count_footer(count: Any) -> tuple[str, ...]:
    """The footer line of a parameter count (none where the count is unknown or zero)."""
    return (f"{format_count(count)} params",) if isinstance(count, int) and count > 0 else ()


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


def key_lines(spec: Any, params: dict[str, Any]) -> tuple[str, ...]:
    """A card's lines of key params, "name: value" (empty values, an unnamed Output's, say nothing)."""
    return tuple(f"{k}: {_value_text(params[k])}" for k in spec.key_params
                 if k in params and params[k] not in ("", None, ()))


def group_param_names(type_id: str) -> tuple[str, ...]:
    """Params of kind 'group' on a type: they name sub-graphs (Group/Repeat/couplings)."""
    from .spec import registry

    spec = registry.find(type_id)
    if spec is None:
        return ()
    return tuple(name for name, p in spec.params.items() if getattr(p, "kind", "") == "group")


def memory_line(spec: Any, params: dict[str, Any], in_region: bool) -> tuple[str, ...]:
    """A Repeat's activation memory: flat when its body runs reversibly, linear otherwise."""
    if "times" in spec.params and group_param_names(spec.type_id):
        growth = "flat (reversible)" if in_region else f"linear (x{params.get('times')})"
        return (f"memory: {growth}",)
    return ()


def card_sizes(graph: Graph, report: Any = None) -> dict[str, tuple[float, float]]:
    """(width, height) of every node's card in ``graph`` as the canvas draws it; ``report``
    (``check(graph)``'s) gives the parameter counts, without it a card with weights is a line short.
    A type no installed plugin declares has its wires' ports and its plugin's two lines."""
    from .spec import registry

    sizes: dict[str, tuple[float, float]] = {}
    infos = getattr(report, "nodes", {}) if report is not None else {}
    for node_id, node in graph.nodes.items():
        inputs, outputs = graph.ports(node_id)
        spec = registry.find(node.type)
        if spec is None:  # (the canvas says "missing plugin:" and the distribution, or "unknown node type")
            record = getattr(graph, "plugins", {}).get(node.type) or {}
            lines = 2 if record.get("distribution") else 1
        else:
            params = graph.resolved_params(node_id)
            info = infos.get(node_id)
            lines = (len(key_lines(spec, params)) + len(memory_line(spec, params, False))
                     + len(count_footer(getattr(info, "parameters", None))))
        sizes[node_id] = (WIDTH, card_height(len(inputs), len(outputs), lines))
    return sizes


__all__ = ["HEADER", "LINE", "PAD", "ROW", "WIDTH", "card_height", "card_sizes", "count_footer", "format_count",
           "group_param_names", "key_lines", "memory_line"]
