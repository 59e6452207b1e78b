"""Whether a wire may be drawn, and why not: the canvas's connection rules.

Structural reasons come from ``Graph.check_connect`` (missing port, self loop,
cycle, duplicate). On top of that an input that is already fed is refused
unless the user asks to replace it, and a wire whose shape the target node
cannot take is refused with the checker's own message: we check the upstream
part of a trial graph (the real graph is never touched).
"""
from __future__ import annotations

from typing import Any

from revstudio.core.graph import Edge, Graph, PortRef, reachable


def structural_reason(graph: Graph, src: PortRef, dst: PortRef, replace: bool = False,
                      ignore: Edge | None = None) -> str | None:
    """Cheap reasons, fine to evaluate on every mouse move."""
    reason = graph.check_connect(src, dst)
    if reason is not None:
        return reason
    fed = [e for e in graph.edges_into(dst.node, dst.port) if e != ignore]
    if fed and not replace:
        return (f"{dst} is already fed by {fed[0].src}; hold Ctrl while dropping to replace "
                f"that wire, or drag it off first")
    return None


def _check_fn() -> Any:
    try:
        from revstudio.core.check import check
    except ImportError:  # the checker is not there: structural rules only
        return None
    return check


def _upstream(graph: Graph, edges: list[Edge], roots: set[str]) -> set[str]:
    preds: dict[str, list[str]] = {}
    for e in edges:
        preds.setdefault(e.dst.node, []).append(e.src.node)
    return reachable(roots, preds)


def _trial(graph: Graph, edges: list[Edge], keep: set[str]) -> Graph:
    """A throwaway graph sharing node objects (the checker only reads them)."""
    trial = Graph(graph.name)
    trial.nodes = {k: v for k, v in graph.nodes.items() if k in keep}
    trial.edges = [e for e in edges if e.src.node in keep and e.dst.node in keep]
    trial.groups = graph.groups
    return trial


def _errors_at(report: Any, node_id: str) -> set[str]:
    return {d.message for d in report.diagnostics if d.severity == "error" and d.node == node_id}


def shape_reason(graph: Graph, src: PortRef, dst: PortRef, removed: tuple[Edge, ...] = ()) -> str | None:
    """The checker's complaint about ``dst``'s node that this wire would introduce, if any."""
    check = _check_fn()
    if check is None:
        return None
    before_edges = [e for e in graph.edges if e not in removed]
    after_edges = [*before_edges, Edge(src, dst)]
    keep = _upstream(graph, after_edges, {dst.node})
    try:
        before = _errors_at(check(_trial(graph, before_edges, keep)), dst.node)
        after = _errors_at(check(_trial(graph, after_edges, keep)), dst.node)
    except Exception:  # a checker bug must never block drawing: the full check will show it
        return None
    new = sorted(after - before)
    if not new:
        return None
    # the checker's messages mostly name the node already ("Merge m: in1 is ..."): once is enough
    head = new[0].split(":", 1)[0].split()
    return new[0] if dst.node in head else f"{dst.node}: {new[0]}"


def connection_reason(graph: Graph, src: PortRef, dst: PortRef, replace: bool = False,
                      moving: Edge | None = None) -> str | None:
    """Why ``src -> dst`` is refused, or None. ``moving`` is a wire being re-plugged."""
    reason = structural_reason(graph, src, dst, replace, ignore=moving)
    if reason is not None:
        return reason
    removed = tuple(graph.edges_into(dst.node, dst.port)) if replace else ()
    if moving is not None:
        removed = (*removed, moving)
    return shape_reason(graph, src, dst, removed)
