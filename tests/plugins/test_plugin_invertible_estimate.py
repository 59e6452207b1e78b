"""A plugin's invertible layer is estimated in reversible mode as it runs there.

A plugin-author probe declared a Householder 1x1 (orthogonal channel mixing by an einsum, its own
inverse) exactly as the catalog test measured it, and ``revstudio memory`` at batch 32 was 20 %
over in reversible mode: the region's backward reruns the layer on the input its inverse rebuilt,
already in the channels-first order the einsum multiplies, so the copy the forward keeps
(``values``) is no copy there (``SavedTensors.rerun_values``). With a squeeze-excite coupling
before it, 25 % under: the inverse hands back a view in another axis order, so the coupling's
updates made new buffers beside the streams (``SavedTensors.inverse_dense``); with another
coupling after it too, 6.8 % under (the walk priced that only where the layer ends the region).
Both fields are declared here as the catalog test (tests/nodes/test_saved_for_backward.py)
measures them.
"""
from __future__ import annotations

from math import prod
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from revstudio.core.generate import Builder, _body  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.core.spec import NodeSpec, SavedTensors, registry  # noqa: E402

BATCH = 32


class Householder(nn.Module):
    """y = (I - 2 v v^T / v.v) x over channels: orthogonal, so its inverse is its transpose."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.v = nn.Parameter(torch.randn(channels))

    def weight(self) -> Any:
        v = self.v
        return torch.eye(v.numel(), dtype=v.dtype, device=v.device) - 2 * torch.outer(v, v) / (v @ v)

    def forward(self, x: Any) -> tuple[Any]:
        return (torch.einsum("oc,bchw->bohw", self.weight(), x),)

    def inverse(self, y: Any) -> tuple[Any]:
        return (torch.einsum("oc,bohw->bchw", self.weight(), y),)


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(channels, 4), nn.Linear(4, channels)

    def forward(self, x: Any) -> tuple[Any]:
        return (x * torch.sigmoid(self.fc2(torch.relu(self.fc1(x.mean((2, 3))))))[:, :, None, None],)


def _same(ctx: Any) -> dict[str, Any]:
    return {"out": ctx.input("in")}


def _householder_saved(params: Any, ins: Any, outs: Any) -> SavedTensors:
    # the einsum keeps a channels-first copy of its input, but none of what its inverse rebuilt
    # (already in that order), and that is a view in another axis order (measured)
    return SavedTensors(values=prod(ins[0]), rerun_values=0, inverse_dense=False)


def _se_saved(params: Any, ins: Any, outs: Any) -> SavedTensors:
    c = ins[0][0]
    return SavedTensors(ports=("in",), values=2 * c + 4, backward_values=prod(ins[0]) - 2 * c + 4)


SPECS = [
    NodeSpec(type_id="TestHouseholder", category="Tests", help="orthogonal 1x1", params={}, inputs=("in",),
             outputs=("out",), infer=_same, count_params=lambda ctx: ctx.input("in")[0],
             build=lambda ctx: Householder(ctx.in_shapes[0][0]), invertible=True, fresh_output=True,
             saved_for_backward=_householder_saved),
    NodeSpec(type_id="TestSqueezeExcite", category="Tests", help="squeeze-excite", params={}, inputs=("in",),
             outputs=("out",), infer=_same, count_params=lambda ctx: 9 * ctx.input("in")[0] + 4,
             build=lambda ctx: SqueezeExcite(ctx.in_shapes[0][0]), fresh_output=True, saved_for_backward=_se_saved),
]


@pytest.fixture
def plugged() -> Any:
    """The two types registered the way a plugin's entry point does, and taken out again."""
    for spec in SPECS:
        registry.register(spec)
    yield
    for spec in SPECS:
        registry._specs.pop(spec.type_id, None)


def _probe(couplings: int) -> Graph:
    """conv -> [an additive coupling of squeeze-excites] -> Householder -> [another] -> pool -> linear."""
    b = Builder("probe")
    b.node("Input", "x", shape=[3, 8, 8])
    b.node("Conv", "conv", out_channels=16, kernel_size=3, padding="same")
    b.node("TestHouseholder", "hh")
    b.node("Pool", "pool", kind="global_avg")
    b.node("Linear", "fc", out_features=10)
    b.node("Output", "y")
    for name in ("block", "block2")[:couplings]:
        b.node("AdditiveCoupling", name, f="se", g="se")
    b.chain("x.out", "conv", *["block"][:couplings], "hh", *["block2"][:couplings - 1], "pool", "fc", "y")
    graph = b.done()

    def se(body: Builder, src: str) -> str:
        body.node("TestSqueezeExcite", "se")
        return body.chain(src, "se")

    graph.groups["se"] = _body("se", se)
    return graph


@pytest.mark.parametrize("couplings", [0, 1, 2], ids=["alone", "after-a-coupling", "between-couplings"])
def test_a_plugins_invertible_layer_is_estimated_as_measured_in_reversible_mode(plugged: Any,
                                                                                couplings: int) -> None:
    from revstudio.compiler import compile as compile_graph
    from revstudio.diagnostics.check import full_check
    from revstudio.diagnostics.estimate import estimate_peak
    from revstudio.diagnostics.gradcheck import random_inputs
    from revstudio.diagnostics.memory import measure_step

    torch.set_num_threads(1)
    graph = _probe(couplings)
    report = full_check(graph, batch=BATCH)
    assert report.valid and report.regions, report
    torch.manual_seed(0)
    model = compile_graph(graph, mode="reversible")
    inputs = random_inputs(graph, BATCH, torch.float32, requires_grad=False)
    measured = measure_step(model, inputs, timing_runs=0)["peak_bytes"]
    estimated = estimate_peak(graph, report, batch=BATCH, mode="reversible")
    # before: 19.3 % over alone (the rerun's copy counted), 20.2 % under after the coupling, 6.8 %
    # under between two
    assert abs(estimated / measured - 1) < 0.005, (estimated, measured)
