"""The editor's memory of whole-graph results: regions and memory estimate by graph content.

After the incremental shape check, what an edit at 1,000 nodes still costs is whole-graph:
the region analysis, the memory estimate and its simulated peaks (the region badges and the
status bar read them). An :class:`AnalysisMemo` keeps the last few of those results keyed on
everything they read (each node's id, type and params in order, the edges in order, group
bodies, renames, training section, plugin record, the node registry, batch and device;
positions are left out: a move changes no figure). An edit that brings the graph back to a
state it was in a few edits ago (undo, redo, a wire taken off and put back) reuses them, the
estimate's peaks included; any other edit computes them afresh. The report is the full
check's either way (``tests/diagnostics/test_check_memo.py`` compares them).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from revstudio.core.graph import Graph
from revstudio.core.spec import Registry


@dataclass(frozen=True)
class Derived:
    """What ``full_check`` derives from the graph and its shapes, beyond the core check."""

    regions: list[Any]
    near_misses: list[Any]
    order: list[str] | None
    estimate: Any
    estimate_error: Any  # the warning the estimate failed with, or None


def _graph_key(graph: Graph) -> tuple[Any, ...]:
    return (
        tuple((n.id, n.type, repr(n.params)) for n in graph.nodes.values()),
        tuple((e.src.node, e.src.port, e.dst.node, e.dst.port) for e in graph.edges),
        repr(getattr(graph, "renamed", None)),
    )


def graph_content(graph: Graph) -> tuple[Any, ...]:
    """The graph's nodes (ids, types, params, in order), edges and group bodies: what a report
    describes (``Report.checked``, so ``compile`` can tell a report of an edited graph)."""
    return (_graph_key(graph), tuple((name, _graph_key(body)) for name, body in graph.groups.items()))


def another_graph(graph: Graph, content: tuple[Any, ...]) -> tuple[int, int] | None:
    """(how many, of how many) nodes of the state ``content`` describes are in ``graph``, when
    fewer than half are: most likely a report of another project (two may share an Input's id),
    not of this one a few edits ago. None otherwise."""
    old_ids = {n[0] for n in content[0][0]}
    shared = sum(1 for nid in old_ids if nid in graph.nodes)
    return (shared, len(old_ids)) if old_ids and 2 * shared < len(old_ids) else None


def changed_since(graph: Graph, content: tuple[Any, ...]) -> str | None:
    """What differs between ``graph`` and the state ``content`` (:func:`graph_content`) describes,
    in words naming the node or group; None when nothing does."""
    now = graph_content(graph)
    if now == content:
        return None
    (nodes, edges, renamed), bodies = now
    (old_nodes, old_edges, old_renamed), old_bodies = content
    before = {n[0]: n for n in old_nodes}
    for node in nodes:
        if node[0] not in before:
            return f"node {node[0]!r} was added"
        if before.pop(node[0]) != node:
            return f"node {node[0]!r} has other params or another type"
    if before:
        return f"node {next(iter(before))!r} was removed"
    if edges != old_edges:
        return "its wires changed"
    old = dict(old_bodies)
    for name, body in bodies:
        if old.pop(name, None) != body:
            return f"group {name!r} changed"
    return f"group {next(iter(old))!r} was removed" if old else "nodes were renamed"


def content_key(graph: Graph, registry: Registry, batch: int, device: str,
                content: tuple[Any, ...] | None = None) -> tuple[Any, ...]:
    """Everything regions and the estimate read, as a hashable value (positions excluded;
    ``content``: :func:`graph_content`, when the caller has it)."""
    return (
        *(content if content is not None else graph_content(graph)),
        graph.name,
        repr(getattr(graph, "training", None)),
        repr(getattr(graph, "plugins", None)),
        id(registry), tuple(id(s) for s in registry),
        batch, device,
    )


class AnalysisMemo:
    """The last ``size`` graph states' :class:`Derived` results, most recent last.

    ``hits`` / ``misses``: how many ``full_check`` calls reused / computed them (what tests
    count instead of timing).
    """

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self._kept: OrderedDict[tuple[Any, ...], Derived] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[Any, ...]) -> Derived | None:
        found = self._kept.get(key)
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        self._kept.move_to_end(key)
        return found

    def put(self, key: tuple[Any, ...], derived: Derived) -> None:
        """Keep ``derived``, made from the graph as it is now (the state ``key`` describes)."""
        est = derived.estimate
        if est is not None:
            # The estimate computes its peaks and facts when first asked, and its walker holds the
            # live graph: asked first after a later edit, it could keep figures read from that
            # state and serve them on a return to this one (not seen in the edits tried, but
            # nothing rules it out). Ask now: the badges and the status bar read the peaks after
            # every check anyway, and the facts cost ~2 ms at 1,000 nodes.
            getattr(est, "peaks", None)
            getattr(est, "facts", None)
        self._kept[key] = derived
        self._kept.move_to_end(key)
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)
