"""Walks shared by identical couplings (``diagnostics.peak_memo``): a wired coupling's F is walked
once per distinct layers, and the figures stay the full computation's after every edit.

Work is counted (``simulate`` calls, ``WalkTable.simulations``), never timed.
"""
from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from revstudio.core.check import IncrementalCheck
from revstudio.core.commands import Connect, Disconnect, RenameNode, SetParam, UndoStack, remove_nodes
from revstudio.core.generate import large_graph, random_graph
from revstudio.core.graph import Graph
from revstudio.diagnostics import peak_memo, peak_steps
from revstudio.diagnostics.check import full_check
from revstudio.diagnostics.peak import Unit

MODES = ("standard", "reversible", "checkpoint")


def _figures(report: Any) -> Any:
    est = report.estimate
    if est is None:
        return None
    return ([(m, repr(est.peaks.get(m))) for m in MODES], est.batch_breaks, repr(est.facts))


def _uncached(graph: Graph) -> Any:
    """The figures with every coupling walked anew (no key: the table neither serves nor keeps)."""
    real = peak_steps.walk_key
    peak_steps.walk_key = lambda *a, **k: None  # type: ignore[assignment]
    try:
        return _figures(full_check(graph))
    finally:
        peak_steps.walk_key = real


def test_identical_couplings_are_walked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    peak_memo.WIRED.clear()
    calls = {"wired": 0, "simulate": 0}
    real_walk, real_simulate = peak_steps.wired_walk, peak_steps.simulate

    def walk(*a: Any, **k: Any) -> Any:
        calls["wired"] += 1
        return real_walk(*a, **k)

    def simulate(*a: Any, **k: Any) -> Any:
        calls["simulate"] += 1
        return real_simulate(*a, **k)

    monkeypatch.setattr(peak_steps, "simulate", simulate)
    import revstudio.diagnostics.peak_moments as moments
    monkeypatch.setattr(moments, "wired_walk", walk)
    g = large_graph(100)  # 20 hand-wired blocks: 20 couplings of the same layers
    full_check(g, batch=8).estimate.peak_bytes("reversible")
    assert calls["wired"] >= 20
    assert calls["simulate"] <= 3  # was one per coupling (20 and more)
    full_check(g, batch=8).estimate.peak_bytes("reversible")  # the next check: every one kept
    assert calls["simulate"] <= 3


def test_a_key_names_what_the_walk_reads() -> None:
    """Renamed ids give the same key; a value's bytes, a unit's saved set or its work do not."""
    units = [Unit("a", [("x", "out")], [("a", "out")], frozenset({("x", "out")}), work_fwd=4),
             Unit("b", [("a", "out")], [("b", "out")], frozenset())]
    renamed = [Unit("p", [("y", "out")], [("p", "out")], frozenset({("y", "out")}), work_fwd=4),
               Unit("q", [("p", "out")], [("q", "out")], frozenset())]
    size = {"x": 8, "a": 8, "b": 8, "y": 8, "p": 8, "q": 8}

    def key(us: list[Unit], nbytes: Any = lambda v: size[v[0]], grad: Any = lambda v: True) -> Any:
        return peak_memo.walk_key(us, nbytes, lambda v: v, grad, [us[-1].makes[0]], [us[0].reads[0]])

    assert key(units) == key(renamed) is not None
    assert key(units) != key(units, nbytes=lambda v: 16 if v[0] == "b" else 8)
    assert key(units) != key(units, grad=lambda v: v[0] != "x")
    assert key(units) != key([replace(units[0], saved=frozenset()), units[1]])
    assert key(units) != key([replace(units[0], work_fwd=5), units[1]])
    assert key(units) != key([units[0], replace(units[1], reads=[("x", "out")])])


def _edit(g: Graph, rng: random.Random, stack: UndoStack) -> None:
    ids = list(g.nodes)
    choice = rng.randrange(6)
    if choice == 0 and stack.can_undo():
        stack.undo()
    elif choice == 1 and g.edges:
        stack.push(Disconnect(g, rng.choice(list(g.edges))))
    elif choice == 2 and len(ids) > 2:
        stack.push(remove_nodes(g, [rng.choice(ids)]))
    elif choice == 3 and ids:
        stack.push(RenameNode(g, rng.choice(ids), f"n{rng.randrange(10_000)}"))
    elif choice == 4 and len(ids) > 1:
        a, b = rng.sample(ids, 2)
        if g.nodes[a].type != "Output" and g.nodes[b].type not in ("Input",):
            try:
                stack.push(Connect(g, f"{a}.out", f"{b}.in"))
            except Exception:  # noqa: BLE001 - a wire the graph refuses (port taken, a cycle)
                pass
    else:
        layers = [n for n, v in g.nodes.items() if v.type in ("Conv", "Activation")]
        if layers:
            nid = rng.choice(layers)
            name, value = (("out_channels", rng.choice([None, 4, 6, 8])) if g.nodes[nid].type == "Conv"
                           else ("fn", rng.choice(["relu", "tanh", "leaky_relu", "elu"])))
            stack.push(SetParam(g, nid, name, value))


@pytest.mark.parametrize("seed", range(6))
def test_random_edits_give_the_full_computation_s_figures(seed: int) -> None:
    """After every random edit (the table warm from the states before) the figures equal those
    with every coupling walked anew."""
    rng = random.Random(seed)
    g = random_graph(seed, 25) if seed % 3 == 2 else large_graph(60 + 20 * seed)
    stack, inc = UndoStack(), IncrementalCheck()
    for _ in range(15):
        _edit(g, rng, stack)
        assert _figures(full_check(g, incremental=inc)) == _uncached(g)
