"""A model computes in one number type: the one its Input nodes declare, and the boundary
refuses a batch of another where the layers have weights (ActNorm and InvConv1x1 computed
float64 batches with float32 weights silently, half in each type)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import revstudio as rs  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.training.data import input_specs  # noqa: E402


def _chain(layer: str, dtype: str = "float64", **params: object) -> rs.Graph:
    g = rs.Graph()
    g.add_node("Input", "x", {"shape": [4, 4, 4], "dtype": dtype})
    g.add_node(layer, "a", dict(params))
    g.add_node("Output", "y")
    g.connect("x.out", "a.in")
    g.connect("a.out", "y.in")
    return g


def _two_inputs() -> rs.Graph:
    g = rs.Graph()
    g.add_node("Input", "x", {"shape": [4, 4, 4]})
    g.add_node("Input", "w", {"shape": [4, 4, 4], "dtype": "float64"})
    g.add_node("Concat", "cat")
    g.add_node("ActNorm", "a")
    g.add_node("Output", "y")
    g.connect("x.out", "cat.in0")
    g.connect("w.out", "cat.in1")
    g.connect("cat.out", "a.in")
    g.connect("a.out", "y.in")
    return g


@pytest.mark.parametrize("layer", ["ActNorm", "InvConv1x1", "Conv"])
def test_compile_takes_the_number_type_the_input_declares(layer: str) -> None:
    model = rs.compile(_chain(layer), device="cpu")
    assert model.dtype == torch.float64
    assert all(p.dtype == torch.float64 for p in model.parameters())
    assert model(torch.randn(2, 4, 4, 4, dtype=torch.float64)).dtype == torch.float64
    assert rs.compile(_chain(layer, "float32"), device="cpu").dtype == torch.float32


def test_any_float64_input_makes_the_model_float64_and_feeds_every_input_so() -> None:
    g = _two_inputs()
    report = full_check(g)
    assert not report.errors
    words = [d.message for d in report.diagnostics if d.node == "x" and d.severity == "warning"]
    assert words and "Input 'w' declares float64" in words[0] and "set this Input's dtype to float64" in words[0]
    assert not [d for d in report.diagnostics if d.node == "w"]
    assert {node: dtype for node, (_, dtype) in input_specs(g, report).items()} == {"x": "float64", "w": "float64"}
    model = rs.compile(g, device="cpu")
    assert model.dtype == torch.float64
    batch = [torch.randn(2, 4, 4, 4, dtype=torch.float64) for _ in range(2)]
    assert model(*batch).dtype == torch.float64
    assert not [d for d in full_check(_chain("ActNorm")).diagnostics if "declares float" in d.message]


@pytest.mark.parametrize("layer", ["ActNorm", "InvConv1x1"])
def test_a_batch_of_another_number_type_is_refused_naming_the_input(layer: str) -> None:
    model = rs.compile(_chain(layer, "float32"), device="cpu")
    with pytest.raises(TypeError) as info:
        model(torch.randn(2, 4, 4, 4, dtype=torch.float64))
    words = str(info.value)
    assert "input 'x' holds torch.float64 values but the model's weights are torch.float32" in words
    assert "x.to(torch.float32)" in words
    model.double()  # the boundary follows the weights
    assert model(torch.randn(2, 4, 4, 4, dtype=torch.float64)).dtype == torch.float64
    with pytest.raises(TypeError, match="model's weights are torch.float64"):
        model(torch.randn(2, 4, 4, 4))


def test_autocast_and_weightless_models_take_other_number_types() -> None:
    model = rs.compile(_chain("ActNorm", "float32"), device="cpu")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(torch.randn(2, 4, 4, 4).bfloat16())
    weightless = rs.compile(_chain("Squeeze", "float32"), device="cpu")
    assert weightless(torch.randn(2, 4, 4, 4, dtype=torch.float64)).dtype == torch.float64
