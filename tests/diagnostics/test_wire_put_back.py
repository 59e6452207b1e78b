"""A wire taken off and drawn again goes back to its place in the edge order.

The compiler and the estimate read the edge order (a checkpoint plan follows it), so a wire drawn
again at the end of the list could change the figures of a project that is, wire for wire, the one
it was: random graph 10's checkpoint mode read 78,720 B kept after its input's wire was taken off and
drawn again, 85,120 B before. Back in its place, the project is the one it was, and the editor's memo
of that state serves its regions and estimate (a rewire in the 1,007-node lane computed both anew).
After random rewires, the report (shapes, params, diagnostics, regions, estimate and peaks) is the
full check's from scratch.
"""
from __future__ import annotations

import random
from typing import Any

import pytest

from revstudio.core.check import IncrementalCheck
from revstudio.core.commands import Connect, Disconnect, SetParam, UndoStack
from revstudio.core.generate import large_graph, random_graph
from revstudio.diagnostics.check import full_check
from revstudio.diagnostics.check_memo import AnalysisMemo

MODES = ("standard", "reversible", "checkpoint")


def _facts(report: Any) -> Any:
    est = report.estimate
    return report.to_json(), None if est is None else [est.peak_bytes(m) for m in MODES]


def test_a_wire_drawn_again_gives_the_figures_it_had() -> None:
    g = random_graph(10)
    before = _facts(full_check(g))
    wire = next(e for e in g.edges if str(e) == "x.out -> n1.in")
    stack = UndoStack()
    stack.push(Disconnect(g, wire))
    stack.push(Connect(g, wire.src, wire.dst))
    assert g.edges.index(wire) == 0  # where it was, not appended
    assert _facts(full_check(g)) == before


def test_a_wire_drawn_again_after_other_wiring_is_appended() -> None:
    g = large_graph(40)
    first, second = g.edges[3], g.edges[7]
    stack = UndoStack()
    stack.push(Disconnect(g, first))
    stack.push(Disconnect(g, second))  # the edges are no longer those the first one left
    stack.push(Connect(g, first.src, first.dst))
    assert g.edges[-1] == first
    stack.push(Connect(g, second.src, second.dst))
    assert g.edges[-1] == second  # (its own place was taken before the first came back)
    order = list(g.edges)
    stack.undo()
    stack.redo()
    assert list(g.edges) == order


@pytest.mark.parametrize("seed", range(5))
def test_random_rewires_give_the_full_check_report(seed: int) -> None:
    rng = random.Random(seed)
    g = random_graph(seed + 3, 25) if seed % 2 else large_graph(60)
    stack, inc, memo = UndoStack(), IncrementalCheck(), AnalysisMemo()
    full_check(g, incremental=inc, memo=memo)
    put_back = 0
    for _ in range(8):
        original = list(g.edges)
        wire = rng.choice(original)
        stack.push(Disconnect(g, wire))
        assert _facts(full_check(g, incremental=inc, memo=memo)) == _facts(full_check(g))
        between = rng.randrange(3)
        acts = [n for n, v in g.nodes.items() if v.type == "Activation"]
        if between == 1 and acts:  # a param edit between: the wire still goes back to its place
            stack.push(SetParam(g, rng.choice(acts), "fn", rng.choice(["relu", "tanh"])))
            full_check(g, incremental=inc, memo=memo)
        hits = memo.hits
        stack.push(Connect(g, wire.src, wire.dst))
        report = full_check(g, incremental=inc, memo=memo)
        assert _facts(report) == _facts(full_check(g))
        if between != 1:
            assert list(g.edges) == original
            assert memo.hits == hits + 1  # the state before the unwire: regions and estimate reused
            put_back += 1
        else:
            assert g.edges.index(wire) == original.index(wire)
    assert put_back > 0
