"""Incremental checking (revstudio.core.incremental) gives the full check's report, doing less work.

A hypothesis state machine applies random edits (nodes, wires, params, moves, renames,
groups, Repeat, edits inside bodies, cycles, shape mismatches, undo and redo) to generated
graphs and compares the incremental report with a fresh full check after every step. The
other tests count the nodes an edit re-infers (``IncrementalCheck.inferred``), not time.
"""
from __future__ import annotations

from typing import Any

from edit_machine import INDEX, PORTS, EditRules
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from revstudio.core.check import IncrementalCheck, check
from revstudio.core.commands import (
    AddNode,
    Command,
    Connect,
    Move,
    RenameNode,
    SetParam,
    UndoStack,
    add_subgraph,
    connect_replacing,
    fresh_id,
    remove_nodes,
)
from revstudio.core.generate import large_graph, random_graph
from revstudio.core.graph import Graph, GraphError, Node
from revstudio.core.project import loads
from revstudio.diagnostics.check import full_check

BODY = """{"format": "revstudio", "version": 1, "name": "seed", "nodes": [], "edges": [],
  "groups": {"blk": {"nodes": [{"id": "i", "type": "GroupInput", "params": {"port": "in"}},
                               {"id": "a", "type": "Activation", "params": {"fn": "relu"}},
                               {"id": "o", "type": "GroupOutput", "params": {"port": "out"}}],
                     "edges": [["i.out", "a.in"], ["a.out", "o.in"]]}}}"""

TYPES = ["Input", "Conv", "Activation", "Merge", "Split", "Concat", "Output", "Repeat", "Group", "NotAType"]
PARAMS = ["out_channels", "mode", "fn", "times", "group", "sections", "shape", "extra"]
VALUES = st.one_of(st.none(), st.integers(-1, 9), st.sampled_from(["add", "relu", "same", "blk", "nope", ""]),
                   st.lists(st.integers(1, 8), max_size=3), st.sampled_from([2.0, True]))
SHAPERS = {"Input": "shape", "Conv": "out_channels", "Linear": "out_features"}


class IncrementalSession(EditRules):
    """Random edits; after each, the incremental report must equal the full check's."""

    graph: Graph

    def __init__(self) -> None:
        super().__init__()
        self.stack = UndoStack()
        self.inc = IncrementalCheck()

    @initialize(seed=st.integers(0, 10_000), size=st.integers(3, 20))
    def start(self, seed: int, size: int) -> None:
        self.graph = random_graph(seed, size)
        blk = loads(BODY).groups["blk"]
        blk.groups = self.graph.groups
        self.graph.groups["blk"] = blk

    def push(self, cmd: Command) -> None:
        try:
            self.stack.push(cmd)
        except GraphError:
            pass

    @precondition(lambda self: len(self.graph.nodes) < 30)
    @rule(type_=st.sampled_from(TYPES), name=st.sampled_from(PARAMS), value=VALUES)
    def add_node(self, type_: str, name: str, value: Any) -> None:
        params = {"group": "blk"} if type_ in ("Repeat", "Group") else {}
        if value is not None:
            params[name] = value
        self.push(AddNode(self.graph, Node(fresh_id(type_.lower(), self.graph.nodes), type_, params)))

    @precondition(lambda self: len(self.graph.nodes) >= 2)
    @rule(i=INDEX, j=INDEX, src=st.sampled_from(PORTS), dst=st.sampled_from(PORTS), replace=st.booleans())
    def connect(self, i: int, j: int, src: str, dst: str, replace: bool) -> None:
        ids = list(self.graph.nodes)
        a, b = self.pick(i, ids), self.pick(j, ids)  # no cycle check: cycles and double feeds happen
        make = connect_replacing if replace else Connect
        self.push(make(self.graph, f"{a}.{src}", f"{b}.{dst}"))

    @precondition(lambda self: self.graph.nodes)
    @rule(i=INDEX, name=st.sampled_from(PARAMS), value=VALUES)
    def set_param(self, i: int, name: str, value: Any) -> None:
        self.push(SetParam(self.graph, self.pick(i, list(self.graph.nodes)), name, value))

    @precondition(lambda self: any(n.type in SHAPERS for n in self.graph.nodes.values()))
    @rule(i=INDEX, shape=st.sampled_from([[2, 8], [4, 8], [4, 8, 8], [6, 4, 4]]), channels=st.integers(1, 8))
    def change_a_shape(self, i: int, shape: list[int], channels: int) -> None:
        """What changes shapes downstream: an Input's shape, a Conv's or Linear's width."""
        nid = self.pick(i, [n.id for n in self.graph.nodes.values() if n.type in SHAPERS])
        node = self.graph.node(nid)
        name, value = SHAPERS[str(node.type)], (shape if node.type == "Input" else channels)
        self.push(SetParam(self.graph, nid, name, value))

    @precondition(lambda self: self.graph.nodes)
    @rule(i=INDEX, x=st.integers(-500, 500))
    def move(self, i: int, x: int) -> None:
        self.push(Move(self.graph, {self.pick(i, list(self.graph.nodes)): (x, x)}))

    @precondition(lambda self: self.graph.nodes)
    @rule(i=INDEX, j=INDEX)
    def rename(self, i: int, j: int) -> None:
        ids = list(self.graph.nodes)
        old = self.pick(i, ids)
        self.push(RenameNode(self.graph, old, fresh_id(f"r{j % 7}", self.graph.nodes)))

    @precondition(lambda self: self.graph.nodes and len(self.graph.nodes) < 30)
    @rule(picks=st.lists(INDEX, min_size=1, max_size=4))
    def paste(self, picks: list[int]) -> None:
        ids = list(self.graph.nodes)
        chosen = [self.graph.node(n) for n in dict.fromkeys(self.pick(i, ids) for i in picks)]
        self.push(add_subgraph(self.graph, chosen, self.graph.edges, offset=(40, 0)))

    @precondition(lambda self: any(body.nodes for body in self.graph.groups.values()))
    @rule(i=INDEX, j=INDEX, k=INDEX, name=st.sampled_from(PARAMS), value=VALUES, wire=st.booleans())
    def edit_inside_a_group(self, i: int, j: int, k: int, name: str, value: Any, wire: bool) -> None:
        body = self.pick(i, [b for b in self.graph.groups.values() if b.nodes])
        ids = list(body.nodes)
        if wire:
            self.push(connect_replacing(body, f"{self.pick(j, ids)}.out", f"{self.pick(k, ids)}.in"))
        else:
            self.push(SetParam(body, self.pick(j, ids), name, value))

    @invariant()
    def incremental_equals_full(self) -> None:
        if not hasattr(self, "graph"):
            return
        full = check(self.graph)
        assert self.inc.check(self.graph) == full
        assert self.inc.check(self.graph) == full  # twice: a check that changes nothing keeps it


IncrementalSession.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestIncrementalSession = IncrementalSession.TestCase


def _first(graph: Graph, type_id: str) -> str:
    return next(n.id for n in graph.nodes.values() if n.type == type_id)


def _checked(n: int = 300) -> tuple[Graph, IncrementalCheck]:
    g = large_graph(n)
    inc = IncrementalCheck()
    inc.check(g)
    assert inc.inferred > 0.9 * len(g) and inc.resolved == len(g)
    return g, inc


def test_a_check_with_no_edit_infers_and_resolves_nothing() -> None:
    g, inc = _checked()
    assert inc.check(g) == check(g)
    assert (inc.inferred, inc.resolved) == (0, 0)


def test_moves_and_renames_infer_nothing() -> None:
    g, inc = _checked()
    stack = UndoStack()
    stack.push(Move(g, {nid: (1.0, 2.0) for nid in list(g.nodes)[:50]}))
    assert inc.check(g) == check(g)
    assert (inc.inferred, inc.resolved) == (0, 0)
    conv = _first(g, "Conv")
    stack.push(RenameNode(g, conv, "renamed_conv"))
    assert inc.check(g) == check(g)
    assert (inc.inferred, inc.resolved) == (0, 0)
    stack.undo()
    assert inc.check(g) == check(g)
    assert (inc.inferred, inc.resolved) == (0, 0)


def test_a_param_edit_re_infers_the_node_and_stops_where_shapes_do_not_change() -> None:
    g, inc = _checked()
    act = _first(g, "Activation")
    g.set_param(act, "fn", "tanh")  # same output shape: nothing downstream is re-inferred
    assert inc.check(g) == check(g)
    assert (inc.inferred, inc.resolved) == (1, 1)


def test_a_shape_changing_edit_re_infers_only_what_lies_downstream_until_shapes_agree_again() -> None:
    g, inc = _checked()
    g.set_param("l0b0_f_conv1", "out_channels", 3)  # conv1, relu, conv2 (4 channels again): stops
    assert inc.check(g) == check(g)
    assert (inc.inferred, inc.resolved) == (3, 1)
    g.set_param("l0b0_f_conv2", "out_channels", 3)  # a mismatch at the merge, reported once
    report = inc.check(g)
    assert report == check(g) and not report.valid
    assert (inc.inferred, inc.resolved) == (2, 1)  # conv2 and the merge; what follows is blocked
    g.set_param("l0b0_f_conv2", "out_channels", None)
    assert inc.check(g) == check(g) and (inc.inferred, inc.resolved) == (2, 1)


def test_wiring_and_deleting_re_infer_a_few_nodes() -> None:
    g, inc = _checked()
    stack = UndoStack()
    act = _first(g, "Activation")
    stack.push(remove_nodes(g, [act]))
    assert inc.check(g) == check(g)
    assert inc.inferred <= 2 and inc.resolved == 0
    stack.undo()
    assert inc.check(g) == check(g)
    assert inc.inferred <= 3 and inc.resolved == 1  # the node came back; its readers re-infer


def test_full_check_with_incremental_gives_the_same_report() -> None:
    g = large_graph(120)
    inc = IncrementalCheck()
    assert full_check(g, incremental=inc).to_json() == full_check(g).to_json()
    conv = _first(g, "Conv")
    g.set_param(conv, "out_channels", 3)
    assert full_check(g, incremental=inc).to_json() == full_check(g).to_json()
    g.set_param(conv, "out_channels", None)
    g.set_param(_first(g, "Input"), "shape", [8, 4, 4])
    assert full_check(g, incremental=inc).to_json() == full_check(g).to_json()
