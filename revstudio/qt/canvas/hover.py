"""Hover text of the canvas: what flows through a port, and what a node costs in memory.

Both are tooltip HTML built from the graph and the analysis report; the scene
asks for them when the pointer rests on a port or a node.
"""
from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from revstudio.core.graph import Graph, PortRef

from .display import format_shape


def memory_text(report: Any, node_id: str) -> str:
    """The node's memory per mode and how its bytes are attributed ("" where unknown)."""
    from revstudio.qt.memory_figures import node_lines

    try:
        rows = node_lines(report, node_id)
    except Exception:  # a tooltip must never take the canvas down
        return ""
    if not rows:
        return ""
    return "<br>" + "<br>".join(f"<span style='color:gray'>{escape(k)}:</span> {escape(v)}" for k, v in rows)


def port_text(graph: Graph, shape_of: Callable[[PortRef], Any], node_id: str, port: str, is_output: bool) -> str:
    """A port's shape and where its value comes from or goes to."""
    ref = PortRef(node_id, port)
    if is_output:
        shape = format_shape(shape_of(ref))
        readers = [str(e.dst) for e in graph.edges_from(node_id, port)]
        where = ("feeds " + ", ".join(readers[:6]) + (" …" if len(readers) > 6 else "")) if readers \
            else "not connected yet: drag from here to an input"
    else:
        fed = graph.edges_into(node_id, port)
        shape = format_shape(shape_of(fed[0].src)) if fed else ""
        where = f"fed by {fed[0].src}" if fed else "not connected yet: drag here from an output"
    return f"<b>{ref}</b>" + (f" &nbsp;{shape}" if shape else "") + f"<br>{where}"
