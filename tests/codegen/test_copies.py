"""A model copied after a forward (copy.deepcopy; torch.optim.swa_utils.AveragedModel
deep-copies): the last forward's logdet, part of that forward's autograd graph, is not copied."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio.codegen import export  # noqa: E402
from revstudio.compiler import compile as rs_compile  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.nodes.torch_modules.composite import AdditiveCoupling, AffineCoupling  # noqa: E402
from revstudio.nodes.torch_modules.flows import ActNorm, InvConv1x1  # noqa: E402

GLOW = Path(__file__).resolve().parents[2] / "resources" / "examples" / "glow_flow.revs"


def _models():
    namespace: dict = {}
    exec(compile(export(load(str(GLOW))), "exported.py", "exec"), namespace)
    return {"exported": namespace["Model"](), "compiled": rs_compile(load(str(GLOW)), device="cpu")}


@pytest.mark.parametrize("which", ["exported", "compiled"])
@pytest.mark.parametrize("mode", ["reversible", "standard", "checkpoint"])
def test_a_flow_model_deep_copies_after_a_forward(which: str, mode: str) -> None:
    """deepcopy raised "Only Tensors created explicitly by the user (graph leaves) support the
    deepcopy protocol" once the model had run a forward with gradients."""
    model = _models()[which]
    model.mode = mode
    x = torch.randn(2, 3, 16, 16)
    model(x)
    assert model.logdet is not None
    twin = copy.deepcopy(model)
    assert torch.equal(twin(x)[0], model(x)[0])
    assert torch.equal(twin.logdet, model.logdet)


@pytest.mark.parametrize("make", [
    lambda: ActNorm(4), lambda: InvConv1x1(4),
    lambda: AffineCoupling(2, _Tuple(torch.nn.Conv2d(2, 4, 1))),
    lambda: AdditiveCoupling(2, _Tuple(torch.nn.Conv2d(2, 2, 1))),
])
def test_a_flow_layer_deep_copies_after_a_forward(make) -> None:
    layer = make()
    layer(torch.randn(2, 4, 3, 3))
    assert layer.logdet is not None and copy.deepcopy(layer).logdet is None


class _Tuple(torch.nn.Module):
    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return (self.inner(x),)
