"""The edits both editing state machines make (``test_undo_stateful``, ``test_incremental``):
remove, disconnect, group, ungroup, undo and redo, on ``self.graph`` through ``self.stack``.
Each machine adds its own start, edits with its own value ranges, ``push`` and invariants."""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from revstudio.core.commands import Command, Disconnect, UndoStack, remove_nodes
from revstudio.core.graph import Graph, GraphError
from revstudio.core.grouping import group_nodes, ungroup

INDEX = st.integers(0, 10_000)
PORTS = ["in", "out", "in0", "in1", "out0", "out1"]


class EditRules(RuleBasedStateMachine):
    graph: Graph
    stack: UndoStack

    def pick(self, index: int, items: list[Any]) -> Any:
        return items[index % len(items)]

    def push(self, cmd: Command) -> None:
        raise NotImplementedError

    @precondition(lambda self: self.graph.nodes)
    @rule(i=INDEX, count=st.integers(1, 3))
    def remove(self, i: int, count: int) -> None:
        ids = list(self.graph.nodes)
        self.push(remove_nodes(self.graph, [self.pick(i + k, ids) for k in range(count)]))

    @precondition(lambda self: self.graph.edges)
    @rule(i=INDEX)
    def disconnect(self, i: int) -> None:
        self.push(Disconnect(self.graph, self.pick(i, self.graph.edges)))

    @precondition(lambda self: self.graph.nodes)
    @rule(picks=st.lists(INDEX, min_size=1, max_size=4))
    def group(self, picks: list[int]) -> None:
        ids = list(self.graph.nodes)
        try:
            cmd = group_nodes(self.graph, {self.pick(i, ids) for i in picks})
        except GraphError:
            return  # e.g. the selection would feed itself
        self.push(cmd)

    @precondition(lambda self: any(n.type == "Group" for n in self.graph.nodes.values()))
    @rule(i=INDEX)
    def ungroup(self, i: int) -> None:
        groups = [n.id for n in self.graph.nodes.values() if n.type == "Group"]
        try:
            cmd = ungroup(self.graph, self.pick(i, groups))
        except GraphError:
            return  # its group is gone (the param was edited)
        self.push(cmd)

    @precondition(lambda self: self.stack.can_undo())
    @rule()
    def undo(self) -> None:
        self.stack.undo()

    @precondition(lambda self: self.stack.can_redo())
    @rule()
    def redo(self) -> None:
        self.stack.redo()
