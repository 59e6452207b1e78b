"""Random edit sequences through UndoStack: undo and redo restore every saved state exactly.

A hypothesis state machine adds and removes nodes, connects and disconnects,
sets params, moves, groups, ungroups, pastes and edits inside a group body,
with undo/redo interleaved. After every step the saved file must equal the one
recorded for the stack's position and must load back byte-identically; at the
end, undoing everything gives the first file and redoing everything the last.
"""
from __future__ import annotations

from typing import Any

from edit_machine import INDEX, PORTS, EditRules
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from revstudio.core.commands import (
    AddNode,
    Command,
    Move,
    SetParam,
    UndoStack,
    add_subgraph,
    connect_replacing,
    fresh_id,
)
from revstudio.core.graph import Graph, GraphError, Node
from revstudio.core.project import dumps, loads

SEED = """{
  "format": "revstudio", "version": 1, "name": "seed",
  "nodes": [
    {"id": "x", "type": "Input", "params": {"shape": [8, 16, 16]}, "pos": [0, 0]},
    {"id": "s", "type": "Split", "params": {"sections": 2}, "pos": [100, 0]},
    {"id": "f", "type": "Conv", "params": {"out_channels": 4, "padding": "same"}, "pos": [200, -40]},
    {"id": "m", "type": "Merge", "params": {"mode": "add"}, "pos": [300, 0]},
    {"id": "g", "type": "Group", "params": {"group": "blk"}, "pos": [350, 60]},
    {"id": "y", "type": "Output", "pos": [400, 0]}
  ],
  "edges": [["x.out", "s.in"], ["s.out1", "f.in"], ["s.out0", "m.in0"], ["f.out", "m.in1"],
            ["m.out", "g.in"], ["g.out", "y.in"]],
  "groups": {"blk": {"nodes": [{"id": "i", "type": "GroupInput", "params": {"port": "in"}},
                               {"id": "a", "type": "Activation", "params": {"fn": "relu"}},
                               {"id": "o", "type": "GroupOutput", "params": {"port": "out"}}],
                     "edges": [["i.out", "a.in"], ["a.out", "o.in"]]}},
  "training": {"steps": 5},
  "view": {"zoom": 1.0}
}"""

TYPES = ["Input", "Conv", "Activation", "Merge", "Split", "Output", "NotAType"]
PARAMS = ["out_channels", "mode", "fn", "extra"]
VALUES = st.one_of(st.none(), st.integers(-3, 64), st.sampled_from(["add", "relu", "same", ""]),
                   st.lists(st.integers(1, 8), max_size=3), st.floats(-1e6, 1e6, allow_nan=False))
COORD = st.floats(-1e5, 1e5, allow_nan=False, allow_infinity=False)


class EditSession(EditRules):
    def __init__(self) -> None:
        super().__init__()
        self.graph = loads(SEED)
        self.stack = UndoStack()
        self.snapshots = [dumps(self.graph)]  # snapshots[i]: the file when stack.index == i

    # ---- helpers --------------------------------------------------------
    def push(self, cmd: Command) -> None:
        at = self.stack.index
        try:
            self.stack.push(cmd)
        except GraphError:
            assert dumps(self.graph) == self.snapshots[at], "a failed edit changed the graph"
            return
        state = dumps(self.graph)
        if self.stack.index == at - 1:  # merged back to where the previous command began: gone
            del self.snapshots[at:]
            assert state == self.snapshots[-1]
        elif self.stack.index == at:  # merged into the previous command
            self.snapshots[at:] = [state]
        else:
            self.snapshots[at + 1:] = [state]

    def group_bodies(self) -> list[Graph]:
        return list(self.graph.groups.values())

    # ---- edits ----------------------------------------------------------
    @precondition(lambda self: len(self.graph.nodes) < 25)
    @rule(type_=st.sampled_from(TYPES), name=st.sampled_from(PARAMS), value=VALUES, x=COORD, y=COORD)
    def add_node(self, type_: str, name: str, value: Any, x: float, y: float) -> None:
        params = {} if value is None else {name: value}
        node_id = fresh_id(type_.lower(), self.graph.nodes)
        self.push(AddNode(self.graph, Node(node_id, type_, params, (x, y))))

    @precondition(lambda self: len(self.graph.nodes) >= 2)
    @rule(i=INDEX, j=INDEX, src=st.sampled_from(PORTS), dst=st.sampled_from(PORTS))
    def connect(self, i: int, j: int, src: str, dst: str) -> None:
        ids = list(self.graph.nodes)
        a, b = self.pick(i, ids), self.pick(j, ids)
        self.push(connect_replacing(self.graph, f"{a}.{src}", f"{b}.{dst}"))

    @precondition(lambda self: self.graph.nodes)
    @rule(i=INDEX, name=st.sampled_from(PARAMS), value=VALUES)
    def set_param(self, i: int, name: str, value: Any) -> None:
        self.push(SetParam(self.graph, self.pick(i, list(self.graph.nodes)), name, value))

    @precondition(lambda self: self.graph.nodes)
    @rule(i=INDEX, x=COORD, y=COORD)
    def move(self, i: int, x: float, y: float) -> None:
        self.push(Move(self.graph, {self.pick(i, list(self.graph.nodes)): (x, y)}))

    @precondition(lambda self: self.graph.nodes and len(self.graph.nodes) < 25)
    @rule(picks=st.lists(INDEX, min_size=1, max_size=4), dx=COORD)
    def paste(self, picks: list[int], dx: float) -> None:
        ids = list(self.graph.nodes)
        chosen = [self.graph.node(n) for n in dict.fromkeys(self.pick(i, ids) for i in picks)]
        self.push(add_subgraph(self.graph, chosen, self.graph.edges, offset=(dx, 0)))

    @precondition(lambda self: any(body.nodes for body in self.graph.groups.values()))
    @rule(i=INDEX, j=INDEX, name=st.sampled_from(PARAMS), value=VALUES)
    def edit_inside_a_group(self, i: int, j: int, name: str, value: Any) -> None:
        bodies = [b for b in self.graph.groups.values() if b.nodes]
        body = self.pick(i, bodies)
        self.push(SetParam(body, self.pick(j, list(body.nodes)), name, value))

    # ---- what must always hold ------------------------------------------
    @invariant()
    def file_matches_the_stack_position(self) -> None:
        assert len(self.snapshots) == len(self.stack) + 1
        text = dumps(self.graph)
        assert text == self.snapshots[self.stack.index]
        assert dumps(loads(text)) == text  # whatever the editor makes, it can open again

    def teardown(self) -> None:
        while self.stack.undo():
            pass
        assert dumps(self.graph) == self.snapshots[0]
        while self.stack.redo():
            pass
        assert dumps(self.graph) == self.snapshots[-1]


EditSession.TestCase.settings = settings(
    max_examples=100, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestEditSession = EditSession.TestCase
