"""How the inspector's field edits reach the undo stack: one step per visit of a field.

Keystrokes that parse are committed as they come and merge into one step; while the
text does not parse, the nodes hold what they held when the visit began, so an
invalid value changes nothing (a visit that ends where it began leaves no step).
"""
from __future__ import annotations

from typing import Any

from revstudio.core.commands import Command, Macro, SetParam
from revstudio.core.graph import Graph, Node
from revstudio.qt.document import Document


class ParamCommitter:
    """Pushes the edits of one parameter field for one node or several nodes of one type."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self._before: dict[str, dict[str, Any]] = {}  # param -> node id -> value when the visit began

    def commit(self, graph: Graph, nodes: list[Node], name: str, value: Any) -> None:
        """Set ``name`` to ``value`` on ``nodes`` (several: one macro, every node included)."""
        if not nodes or all(n.params.get(name) == value for n in nodes):
            return
        self._before.setdefault(name, {n.id: n.params.get(name) for n in nodes})
        self._push(graph, nodes, name, {n.id: value for n in nodes})

    def revert(self, graph: Graph, nodes: list[Node], name: str) -> None:
        """The text stopped parsing: put back what ``nodes`` held when this visit began."""
        before = self._before.get(name)
        if not before or not nodes or all(n.params.get(name) == before.get(n.id) for n in nodes):
            return
        self._push(graph, nodes, name, {n.id: before.get(n.id) for n in nodes})

    def finish(self) -> None:
        """The user left the field: the next edit starts a new step."""
        self._before.clear()
        self.document.break_merge()

    def _push(self, graph: Graph, nodes: list[Node], name: str, values: dict[str, Any]) -> None:
        if len(nodes) == 1:
            self.document.push(SetParam(graph, nodes[0].id, name, values[nodes[0].id]))
            return
        # every node, even one that holds the value already: the next key then merges into this
        # step (same nodes, same field), as typing into one node's field does
        changes: list[Command] = [SetParam(graph, n.id, name, values[n.id]) for n in nodes]
        self.document.push(Macro(f"Set {name} on {len(changes)} {nodes[0].type} nodes", changes))
