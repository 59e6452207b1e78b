"""A plain (lu=false) InvConv1x1 whose matrix is nearly singular is refused in backward, by name.

torch's linalg.inv raises only at an exact zero pivot: a float32 matrix with two rows 1e-6 apart
was inverted without a word, and reversible mode's backward returned finite but wrong gradients
(inversion error 3.55) between gradient checks. Its inverse now refuses it as singular, so the
run's ``nan`` row and ``revstudio gradcheck`` name the node as for a singular one.
"""
from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.core.generate import Builder  # noqa: E402
from revstudio.diagnostics.gradcheck import compare_modes  # noqa: E402
from revstudio.diagnostics.singular import SingularLayer, singular_layers  # noqa: E402

C = 8


def _graph(lu: bool = False) -> Any:
    b = Builder("mix")
    b.node("Input", "x", shape=[C, 2, 2])
    b.node("ActNorm", "norm")
    b.node("InvConv1x1", "mix", lu=lu)
    b.node("Output", "z")
    b.chain("x.out", "norm", "mix", "z")
    return b.done()


def _nearly_singular(dtype: torch.dtype) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    w = torch.linalg.qr(torch.randn(C, C, generator=gen, dtype=torch.float64))[0]
    w[1] = w[0] + 1e-6 * torch.randn(C, generator=gen, dtype=torch.float64)
    return w.to(dtype)


def _model(dtype: torch.dtype) -> Any:
    torch.manual_seed(0)
    model = compile_graph(_graph(), mode="reversible", dtype=dtype, device="cpu")
    x = torch.randn(2, C, 2, 2, dtype=dtype)
    model.initialize(x)
    with torch.no_grad():
        model.mix.weight.copy_(_nearly_singular(dtype))
    return model, x


def test_backward_refuses_a_nearly_singular_float32_matrix_and_the_node_is_named() -> None:
    model, x = _model(torch.float32)
    with pytest.raises(torch.linalg.LinAlgError, match="nearly singular in float32"):
        model(x.requires_grad_()).pow(2).sum().backward()
    assert [name for name, _ in singular_layers(model)] == ["mix"]


def test_float64_inverts_the_same_matrix_well_enough() -> None:
    model, x = _model(torch.float64)
    model(x.requires_grad_()).pow(2).sum().backward()
    assert singular_layers(model) == []


def test_gradcheck_names_the_node_instead_of_comparing_wrong_gradients() -> None:
    model, _ = _model(torch.float32)
    with pytest.raises(SingularLayer, match="'mix'"):
        compare_modes(_graph(), dtype="float32", state=model.state_dict())
