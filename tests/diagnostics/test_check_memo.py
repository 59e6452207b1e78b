"""The editor's AnalysisMemo (diagnostics.check_memo): a graph state seen a few edits ago reuses
its regions and memory estimate, and the report stays the full check's.

Random edits with undo and redo; after each, ``full_check`` with the memo must give the same
report (regions, estimate, peaks, diagnostics) as one without it. The other tests count the
region analyses and estimates run (``AnalysisMemo.hits`` / ``misses`` and call counts), not time.
"""
from __future__ import annotations

import random
from typing import Any

import pytest

from revstudio.core.check import IncrementalCheck
from revstudio.core.commands import Connect, Disconnect, Move, RenameNode, SetParam, UndoStack, remove_nodes
from revstudio.core.generate import large_graph, random_graph
from revstudio.core.graph import Graph
from revstudio.diagnostics import check as check_module
from revstudio.diagnostics.check import check_in_two, full_check
from revstudio.diagnostics.check_memo import AnalysisMemo

MODES = ("standard", "reversible", "checkpoint")


def _facts(report: Any) -> Any:
    est = report.estimate
    peaks = None if est is None else [est.peak_bytes(m) for m in MODES]
    return report.to_json(), peaks


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = {"regions": 0, "estimate": 0}
    analyze, estimate = check_module._analyze_regions, check_module.estimate

    def counted_analyze(*a: Any, **k: Any) -> Any:
        calls["regions"] += 1
        return analyze(*a, **k)

    def counted_estimate(*a: Any, **k: Any) -> Any:
        calls["estimate"] += 1
        return estimate(*a, **k)

    monkeypatch.setattr(check_module, "_analyze_regions", counted_analyze)
    monkeypatch.setattr(check_module, "estimate", counted_estimate)
    return calls


def _random_edit(g: Graph, rng: random.Random, stack: UndoStack) -> None:
    ids = list(g.nodes)
    choice = rng.randrange(7)
    if choice == 0 and stack.can_undo():
        stack.undo()
    elif choice == 1 and stack.can_redo():
        stack.redo()
    elif choice == 2 and g.edges:
        stack.push(Disconnect(g, rng.choice(list(g.edges))))
    elif choice == 3 and len(ids) > 2:
        stack.push(remove_nodes(g, [rng.choice(ids)]))
    elif choice == 4 and ids:
        stack.push(RenameNode(g, rng.choice(ids), f"n{rng.randrange(10_000)}"))
    elif choice == 5 and ids:
        stack.push(Move(g, {rng.choice(ids): (rng.uniform(0, 500), 0.0)}))
    else:
        convs = [n for n, v in g.nodes.items() if v.type in ("Conv", "Activation")]
        if convs:
            nid = rng.choice(convs)
            name, value = (("out_channels", rng.choice([None, 2, 3, 4])) if g.nodes[nid].type == "Conv"
                           else ("fn", rng.choice(["relu", "tanh", "leaky_relu"])))
            stack.push(SetParam(g, nid, name, value))


@pytest.mark.parametrize("seed", range(6))
def test_random_edits_with_undo_give_the_full_check_report(seed: int) -> None:
    rng = random.Random(seed)
    g = random_graph(seed, 25) if seed % 2 else large_graph(40)
    stack, inc, memo = UndoStack(), IncrementalCheck(), AnalysisMemo()
    assert _facts(full_check(g, incremental=inc, memo=memo)) == _facts(full_check(g))
    for _ in range(25):
        _random_edit(g, rng, stack)
        assert _facts(full_check(g, incremental=inc, memo=memo)) == _facts(full_check(g))
    assert memo.hits > 0  # the undos, redos and moves reused something


def test_undo_redo_and_a_wire_put_back_reuse_regions_and_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    g = large_graph(120)
    memo, stack = AnalysisMemo(), UndoStack()
    calls = _counting(monkeypatch)
    first = full_check(g, memo=memo)
    first.estimate.peak_bytes("reversible")  # the badges' peaks, computed once
    assert calls == {"regions": 1, "estimate": 1}
    act = next(n for n, v in g.nodes.items() if v.type == "Activation")
    stack.push(SetParam(g, act, "fn", "tanh"))
    full_check(g, memo=memo)
    assert calls == {"regions": 2, "estimate": 2}  # a new graph state: computed
    stack.undo()
    back = full_check(g, memo=memo)
    assert calls == {"regions": 2, "estimate": 2}  # the state before: reused, its peaks too
    assert back.estimate is first.estimate and "_peaks" in back.estimate.__dict__
    stack.redo()
    full_check(g, memo=memo)
    wire = next(e for e in g.edges if e.dst.node == act)
    stack.push(Disconnect(g, wire))
    full_check(g, memo=memo)
    stack.undo()  # the wire back in its place
    full_check(g, memo=memo)
    assert calls == {"regions": 3, "estimate": 3}  # only the unwired state was new
    stack.redo()
    stack.push(Connect(g, wire.src, wire.dst))  # drawn again: back in its place, the state before
    full_check(g, memo=memo)
    assert calls == {"regions": 3, "estimate": 3}
    stack.push(Move(g, {act: (5.0, 5.0)}))
    full_check(g, memo=memo)
    assert calls == {"regions": 3, "estimate": 3}  # a move changes no figure
    assert (memo.hits, memo.misses) == (5, 3)


def test_a_batch_change_is_not_served_from_the_memo() -> None:
    g = large_graph(40)
    memo = AnalysisMemo()
    a = full_check(g, batch=4, memo=memo)
    b = full_check(g, batch=8, memo=memo)
    assert a.estimate is not b.estimate and b.estimate.batch == 8
    assert _facts(b) == _facts(full_check(g, batch=8))



def test_the_estimate_left_for_later_is_kept_only_once_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """The editor checks an edit with ``check_in_two`` and makes the estimate (peaks walked) after
    its paint; the memo keeps it only then, never one whose making a later edit dropped."""
    g = large_graph(40)
    memo, stack = AnalysisMemo(), UndoStack()
    calls = _counting(monkeypatch)
    first, rest = check_in_two(g, memo=memo)
    assert first.estimate is None and rest is not None and calls == {"regions": 1, "estimate": 0}
    rest()  # after the paint, graph unchanged
    assert first.estimate.walked and calls == {"regions": 1, "estimate": 1}
    act = next(n for n, v in g.nodes.items() if v.type == "Activation")
    stack.push(SetParam(g, act, "fn", "tanh"))
    dropped, _dropped_rest = check_in_two(g, memo=memo)  # never finished: the next edit came
    stack.undo()
    back, back_rest = check_in_two(g, memo=memo)
    assert back_rest is None and back.estimate is first.estimate  # kept, walked: complete at once
    stack.redo()
    again, again_rest = check_in_two(g, memo=memo)
    assert again_rest is not None and again.estimate is None  # the dropped state was not kept
    again_rest()
    assert calls == {"regions": 3, "estimate": 2} and again.estimate.walked
    assert _facts(again) == _facts(full_check(g))
