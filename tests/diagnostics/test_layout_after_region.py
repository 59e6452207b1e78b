"""A Conv outside any region that reads a region's output: the estimate against the measured peak.

On the CPU a float32 region with convolutions and no flow layer runs in channels_last streams
and hands its outputs out in that layout. A 3x3 Conv after it then convolves a channels_last
input, makes its weight's gradient channels_last too, and autograd copies that gradient into the
parameter's own layout after the Conv's backward (as inside regions: ``peak_steps.reordered_grads``).
With 64 output channels the copy (36 KiB) is the step's peak at batch 1: reversible mode was
15-33 % under without it (standard and checkpoint modes run no streams: no copy).
"""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.core.project import loads  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.diagnostics.estimate import estimate_peak  # noqa: E402
from revstudio.diagnostics.gradcheck import random_inputs  # noqa: E402
from revstudio.diagnostics.memory import measure_step  # noqa: E402


def conv_after_block(channels: int, size: int, after: int, kernel: int = 3) -> Graph:
    """A stem Conv, a wired RevNet block (a region), then a Conv of ``after`` channels, ReLU,
    global pooling and a Linear head."""
    half = channels // 2
    nodes = [
        {"id": "x", "type": "Input", "params": {"shape": [3, size, size]}},
        {"id": "stem", "type": "Conv", "params": {"out_channels": channels, "kernel_size": 3, "padding": "same"}},
        {"id": "s", "type": "Split", "params": {"sections": 2}},
        {"id": "f", "type": "Conv", "params": {"out_channels": half, "kernel_size": 3, "padding": "same"}},
        {"id": "m1", "type": "Merge", "params": {"mode": "add"}},
        {"id": "g", "type": "Conv", "params": {"out_channels": half, "kernel_size": 3, "padding": "same"}},
        {"id": "m2", "type": "Merge", "params": {"mode": "add"}},
        {"id": "cat", "type": "Concat", "params": {}},
        {"id": "after", "type": "Conv", "params": {"out_channels": after, "kernel_size": kernel, "padding": "same"}},
        {"id": "act", "type": "Activation", "params": {"fn": "relu"}},
        {"id": "pool", "type": "Pool", "params": {"kind": "global_avg"}},
        {"id": "head", "type": "Linear", "params": {"out_features": 10}},
        {"id": "y", "type": "Output", "params": {}},
    ]
    edges = [["x.out", "stem.in"], ["stem.out", "s.in"], ["s.out1", "f.in"], ["s.out0", "m1.in0"], ["f.out", "m1.in1"],
             ["m1.out", "g.in"], ["s.out1", "m2.in0"], ["g.out", "m2.in1"], ["m1.out", "cat.in0"], ["m2.out", "cat.in1"],
             ["cat.out", "after.in"], ["after.out", "act.in"], ["act.out", "pool.in"], ["pool.out", "head.in"],
             ["head.out", "y.in"]]
    return loads(json.dumps({"format": "revstudio", "version": 1, "name": "conv-after-block", "nodes": nodes,
                             "edges": edges, "groups": {}}))


@pytest.mark.parametrize(("channels", "size", "after", "batch"), [(16, 8, 32, 1), (16, 8, 64, 1), (32, 4, 64, 1),
                                                                  (32, 4, 64, 8)])
def test_a_conv_reading_a_channels_last_region_output_copies_its_weight_gradient(
        channels: int, size: int, after: int, batch: int) -> None:
    graph = conv_after_block(channels, size, after)
    report = full_check(graph, batch=batch)
    torch.manual_seed(0)
    model = compile_graph(graph, mode="reversible")
    inputs = random_inputs(graph, batch, torch.float32, requires_grad=False)
    measured = measure_step(model, inputs, timing_runs=0)["peak_bytes"]
    estimated = estimate_peak(graph, report, batch=batch, mode="reversible")
    assert abs(estimated / measured - 1) < 0.005, (estimated, measured)


def test_a_1x1_conv_after_the_region_copies_nothing() -> None:
    """A 1x1 kernel's weight strides are alike in both layouts: autograd keeps the gradient."""
    graph = conv_after_block(16, 8, 64, kernel=1)
    report = full_check(graph, batch=1)
    torch.manual_seed(0)
    model = compile_graph(graph, mode="reversible")
    inputs = random_inputs(graph, 1, torch.float32, requires_grad=False)
    measured = measure_step(model, inputs, timing_runs=0)["peak_bytes"]
    assert abs(estimate_peak(graph, report, batch=1, mode="reversible") / measured - 1) < 0.005
