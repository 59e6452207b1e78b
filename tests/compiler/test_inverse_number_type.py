"""``model.inverse`` takes what ``forward`` takes: a z of another number type than the weights is
refused naming the Output node and the type to use (a float64 z on a float32 flow came back as
float64 samples, computed half in each type), unless autocast runs it; ``.double()`` and ``.half()``
models invert their own type."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import revstudio  # noqa: E402
from revstudio.core.generate import glow_repeat  # noqa: E402

MODES = ("standard", "reversible", "checkpoint")


def _flow():
    torch.manual_seed(0)
    model = revstudio.compile(glow_repeat(1), device="cpu")
    x = torch.randn(4, *model.plan.inputs[0].shape)
    return model, x, model(x).detach()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("other", [torch.float64, torch.float16], ids=["float64", "float16"])
def test_a_z_of_another_type_is_refused_in_every_mode(mode: str, other: torch.dtype) -> None:
    model, _, z = _flow()
    model.mode = mode
    with pytest.raises(TypeError) as info:
        model.inverse(z.to(other))
    text = str(info.value)
    node = model.plan.outputs[0].node
    assert f"inverse: output {node!r} holds {other}" in text, text
    assert "weights are torch.float32" in text and "z.to(torch.float32)" in text, text
    assert f"model.to({other})" in text and "torch.autocast" in text, text


@pytest.mark.parametrize("mode", MODES)
def test_the_models_own_type_still_inverts(mode: str) -> None:
    model, x, z = _flow()
    model.mode = mode
    with torch.no_grad():
        back = model.inverse(z)
    assert back.dtype == torch.float32 and torch.allclose(back, x, atol=1e-4)


def test_a_double_model_inverts_float64_and_refuses_float32() -> None:
    model, x, _ = _flow()
    model.double()
    z = model(x.double()).detach()
    assert model.inverse(z).dtype == torch.float64
    with pytest.raises(TypeError, match=r"weights are torch.float64; convert it with z.to\(torch.float64\)"):
        model.inverse(z.float())


def test_a_half_model_inverts_float16() -> None:
    model, x, _ = _flow()
    model.half()
    with pytest.raises(TypeError, match="weights are torch.float16"):
        model.inverse(torch.randn(2, 12, 4, 4))
    z = torch.randn(2, 12, 4, 4, dtype=torch.float16)
    back = model.inverse(z)  # (torch 2.13's CPU build, which the project pins, has every float16 kernel used)
    assert back.dtype == torch.float16 and back.shape == (2, *x.shape[1:])


@pytest.mark.parametrize("mode", MODES)
def test_under_autocast_another_type_is_taken(mode: str) -> None:
    model, _, z = _flow()
    model.mode = mode
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        back = model.inverse(z.to(torch.bfloat16))
    assert back.shape[0] == z.shape[0] and bool(torch.isfinite(back.float()).all())
