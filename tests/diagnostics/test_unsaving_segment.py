"""A checkpoint segment whose layers save nothing keeps nothing, in the figure ``memory`` shows too.

A Conv, a Split of its output into two halves, a Merge (add) of the halves, then a Linear: the
Split and the add make a reversible region, which checkpoint mode runs as one segment. Neither
layer saves anything, so torch's checkpoint holds none of the segment's inputs (it holds them only
through its layers' saved tensors) and the Conv's output is gone after forward. The peak walk knew
(``Inline.recompute``); the per-node "kept for backward" figure (``MemoryEstimate.activation_bytes``,
what ``revstudio memory`` and ``check`` print as the estimate kept) still charged the segment its
input: 49.2 KiB estimated against 17.3 KiB measured at batch 32.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.core.generate import Builder  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.diagnostics.estimate import estimate  # noqa: E402
from revstudio.diagnostics.gradcheck import random_inputs  # noqa: E402
from revstudio.diagnostics.memory import measure_step  # noqa: E402


def _split_into_add() -> object:
    b = Builder("split-add")
    b.node("Input", "x", shape=[4, 8, 8])
    b.node("Conv", "conv", out_channels=4, kernel_size=3)
    b.node("Split", "fork", sections=2)
    b.node("Merge", "m", mode="add")
    b.node("Flatten", "flat")
    b.node("Linear", "lin", out_features=10)
    b.node("Output", "y")
    b.chain("x.out", "conv", "fork")
    b.wire("fork.out0", "m.in0")
    b.wire("fork.out1", "m.in1")
    b.chain("m.out", "flat", "lin", "y")
    return b.done()


def test_a_segment_that_saves_nothing_keeps_no_input() -> None:
    graph = _split_into_add()
    batch = 32
    report = full_check(graph, batch=batch)
    assert [sorted(r.nodes) for r in report.regions] == [["flat", "fork", "m"]]
    est = estimate(graph, report, batch=batch)
    torch.manual_seed(0)
    model = compile_graph(graph, mode="checkpoint")
    inputs = random_inputs(graph, batch, torch.float32, requires_grad=False)
    measured = measure_step(model, inputs, timing_runs=0)["kept_bytes"]
    shown = est.activation_bytes("checkpoint")
    assert shown == est.peaks["checkpoint"].kept
    assert abs(shown / measured - 1) < 0.005, (shown, measured)
    assert shown == est.activation_bytes("standard")  # the Linear's input alone, as in standard mode
