"""Incremental checking: after an edit, re-infer only the nodes whose inputs to inference changed.

An :class:`IncrementalCheck` keeps, per graph (the project and each group body), what the
last check found for each node: its resolved spec, params and ports (keyed on its type and
params) and its inferred shapes (keyed on those and its input shapes). The next check walks
the graph as :func:`revstudio.core.check.check` does and reuses an entry whose key is
unchanged, so an edit re-infers the edited nodes and what lies downstream of them, stopping
where a node's output shapes come out unchanged; a move re-infers nothing. The report is
the full check's, entry for entry (``tests/core/test_incremental.py`` compares them).
Nodes that refer to groups (Group, Repeat, couplings) are always re-inferred: their result
depends on the bodies (memoised within one check).
"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .diagnostics import Diagnostic
from .graph import Graph, Node
from .spec import NodeSpec, Registry, ShapeT
from .validate import NodeState

ResolveKey = tuple[Any, str]
InputsKey = tuple[tuple[str, "ShapeT | None"], ...]


@dataclass
class _Resolved:
    """What ``resolve_node`` found for one node, for the next check to copy."""

    spec: NodeSpec | None
    params: dict[str, Any]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    ports_known: bool
    failed: bool
    diagnostics: list[Diagnostic]


@dataclass
class Inferred:
    """One node's inference result: shapes by output port, parameters, or the error it raised."""

    outputs: dict[str, ShapeT]
    parameters: int
    error: Diagnostic | None


@dataclass
class _Entry:
    key: ResolveKey
    resolved: _Resolved
    inputs: InputsKey | None = None
    inferred: Inferred | None = None


def _depends_on_groups(spec: NodeSpec) -> bool:
    return any(p.kind == "group" for p in spec.params.values())


class NodeCache:
    """One graph's entries by node id (the project's or one body's)."""

    def __init__(self, graph: Graph) -> None:
        self.entries: dict[str, _Entry] = {}
        self.inferred = 0  # spec.infer calls during the current check
        self.resolved = 0  # resolve_node calls during the current check
        graph.node_renamed.sub(self._renamed)

    def _renamed(self, old: str, new: str) -> None:
        # A rename changes no shape: the entry moves with the node, unless its diagnostics
        # name the old id (they are recomputed then).
        entry = self.entries.pop(old, None)
        if entry is None or entry.resolved.diagnostics:
            return
        if entry.inferred is not None and entry.inferred.error is not None:
            entry.inputs = entry.inferred = None
        self.entries[new] = entry

    def resolve(self, node: Node, diags: list[Diagnostic],
                resolve: Callable[[list[Diagnostic]], NodeState]) -> NodeState:
        """``resolve_node`` for ``node``, from the last check's entry when its type and params
        are unchanged (``resolve`` computes it, adding its diagnostics to the list it gets)."""
        key: ResolveKey = (node.type, repr(node.params))
        entry = self.entries.get(node.id)
        if entry is None or entry.key != key:
            own: list[Diagnostic] = []
            state = resolve(own)
            self.resolved += 1
            diags += own
            if state.spec is None or _depends_on_groups(state.spec):
                self.entries.pop(node.id, None)
                return state
            self.entries[node.id] = _Entry(key, _Resolved(
                state.spec, state.params, state.inputs, state.outputs, state.ports_known, state.failed, own))
            return state
        r = entry.resolved
        diags += r.diagnostics
        return NodeState(node, r.spec, r.params, r.inputs, r.outputs, r.ports_known, r.failed)

    def infer(self, nid: str, ins: dict[str, ShapeT | None], compute: Callable[[], Inferred]) -> Inferred:
        """The node's inference result, from the last check when its inputs are unchanged."""
        entry = self.entries.get(nid)
        if entry is None:  # refers to groups, or of unknown type: always inferred
            self.inferred += 1
            return compute()
        key = tuple(ins.items())
        if entry.inferred is None or entry.inputs != key:
            self.inferred += 1
            entry.inferred, entry.inputs = compute(), key
        return entry.inferred

    def forget_missing(self, graph: Graph) -> None:
        """Drop the entries of nodes that are gone (deleted ones)."""
        if len(self.entries) > len(graph.nodes):
            for nid in [n for n in self.entries if n not in graph.nodes]:
                del self.entries[nid]


class IncrementalCheck:
    """``check(graph)`` that remembers per-node results between calls on the same graphs.

    ``inferred`` / ``resolved``: how many nodes the last call inferred / resolved afresh,
    group bodies included (what tests count instead of timing).
    """

    def __init__(self) -> None:
        self._caches: weakref.WeakKeyDictionary[Graph, NodeCache] = weakref.WeakKeyDictionary()
        self._token: Any = None
        self.inferred = 0
        self.resolved = 0

    def cache_for(self, graph: Graph) -> NodeCache:
        cache = self._caches.get(graph)
        if cache is None:
            cache = self._caches[graph] = NodeCache(graph)
        return cache

    def begin(self, graph: Graph, registry: Registry) -> None:
        """Start one check: entries stay valid while the registry and plugin record do."""
        token = (id(registry), tuple(id(s) for s in registry), repr(getattr(graph, "plugins", None)))
        if token != self._token:
            for old_graph, cache in list(self._caches.items()):
                old_graph.node_renamed.unsub(cache._renamed)
            self._caches = weakref.WeakKeyDictionary()
            self._token = token
        for cache in self._caches.values():
            cache.inferred = cache.resolved = 0

    def end(self) -> None:
        caches = list(self._caches.values())
        self.inferred = sum(c.inferred for c in caches)
        self.resolved = sum(c.resolved for c in caches)

    def check(self, graph: Graph, registry: Registry | None = None) -> Any:
        """The same report as ``revstudio.core.check.check(graph, registry)``."""
        from .check import check

        return check(graph, registry, incremental=self)
