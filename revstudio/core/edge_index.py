"""An edge list that indexes itself: O(1) membership and per-node adjacency.

``Graph.edges`` stays a plain ``list`` in file order (it is saved, and undo
restores positions), but every way of changing it also updates a count per
edge and, for appends and removals, a per-node adjacency in file order. So
``edge in graph.edges`` and ``graph.edges_into(node)`` do not scan all edges,
and building a large graph with ``connect`` is linear, not quadratic.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, SupportsIndex

if TYPE_CHECKING:
    from .graph import Edge


class EdgeList(list["Edge"]):
    """A ``list`` of edges with an index kept in step with every mutation.

    Appends and removals update the adjacency in place; rarer reorderings
    (insert in the middle, slice assignment, sort) drop it and it is rebuilt
    once, on the next query, so undo of a large deletion stays linear overall.
    """

    __slots__ = ("_counts", "_adjacent")

    def __init__(self, edges: Iterable[Edge] = ()) -> None:
        super().__init__(edges)
        self._counts: dict[Edge, int] = {}
        self._adjacent: dict[str, list[Edge]] | None = None
        for edge in self:
            self._counts[edge] = self._counts.get(edge, 0) + 1

    # ---- queries ---------------------------------------------------------
    def __contains__(self, edge: object) -> bool:
        try:
            return edge in self._counts
        except TypeError:  # unhashable: cannot be an Edge
            return False

    def count(self, edge: Any) -> int:
        try:
            return self._counts.get(edge, 0)
        except TypeError:
            return 0

    def touching(self, node_id: str) -> list[Edge]:
        """Edges with ``node_id`` at either end, in list order (do not mutate the result)."""
        return self._adjacency().get(node_id, [])

    # ---- bookkeeping -----------------------------------------------------
    def _adjacency(self) -> dict[str, list[Edge]]:
        if self._adjacent is None:
            adjacent: dict[str, list[Edge]] = {}
            for edge in self:
                _link(adjacent, edge)
            self._adjacent = adjacent
        return self._adjacent

    def _added(self, edges: Iterable[Edge], at_end: bool) -> None:
        if not at_end:  # an edge inserted before others: the rows' order is rebuilt lazily
            self._adjacent = None
        for edge in edges:
            self._counts[edge] = self._counts.get(edge, 0) + 1
            if self._adjacent is not None:
                _link(self._adjacent, edge)

    def _dropped(self, edge: Edge, first: bool) -> None:
        """``edge`` left the list: its first occurrence (``remove``), or one at any position."""
        left = self._counts[edge] - 1
        if left:
            self._counts[edge] = left
            if not first:  # which of several equal edges went changes the rows' order
                self._adjacent = None
        else:
            del self._counts[edge]
        if self._adjacent is not None:
            # the first equal edge in the list is also the first in each end's
            # row (a row keeps list order), so the rows stay exact
            for node_id in _ends(edge):
                row = self._adjacent[node_id]
                row.remove(edge)
                if not row:
                    del self._adjacent[node_id]

    def _reindex(self) -> None:
        self._counts = {}
        for edge in self:
            self._counts[edge] = self._counts.get(edge, 0) + 1
        self._adjacent = None

    # ---- every list mutator ------------------------------------------------
    def append(self, edge: Edge) -> None:
        super().append(edge)
        self._added((edge,), at_end=True)

    def extend(self, edges: Iterable[Edge]) -> None:
        edges = list(edges)
        super().extend(edges)
        self._added(edges, at_end=True)

    def __iadd__(self, edges: Iterable[Edge]) -> EdgeList:  # type: ignore[override,misc]
        self.extend(edges)
        return self

    def insert(self, index: SupportsIndex, edge: Edge) -> None:
        at_end = index.__index__() >= len(self)
        super().insert(index, edge)
        self._added((edge,), at_end=at_end)

    def remove(self, edge: Edge) -> None:
        super().remove(edge)
        self._dropped(edge, first=True)

    def pop(self, index: SupportsIndex = -1) -> Edge:
        edge = super().pop(index)
        self._dropped(edge, first=False)
        return edge

    def clear(self) -> None:
        super().clear()
        self._counts = {}
        self._adjacent = None

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        self._reindex()

    def __delitem__(self, index: Any) -> None:
        super().__delitem__(index)
        self._reindex()

    def __imul__(self, times: SupportsIndex) -> EdgeList:  # type: ignore[override,misc]
        super().__imul__(times)
        self._reindex()
        return self

    def sort(self, *args: Any, **kwargs: Any) -> None:
        super().sort(*args, **kwargs)
        self._adjacent = None  # same edges, new order

    def reverse(self) -> None:
        super().reverse()
        self._adjacent = None

    # pickle and copy rebuild through __init__, so the index is rebuilt too
    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (self.__class__, (list(self),))

    def __copy__(self) -> EdgeList:
        return self.__class__(self)


def _ends(edge: Edge) -> tuple[str, ...]:
    a, b = edge.src.node, edge.dst.node
    return (a,) if a == b else (a, b)


def _link(adjacent: dict[str, list[Edge]], edge: Edge) -> None:
    for node_id in _ends(edge):
        adjacent.setdefault(node_id, []).append(edge)
