"""``model.inverse`` of a flow whose ActNorm layers never saw a batch: they act as the identity, so the
samples are an untrained flow's; torch.export refuses such a model, inverse said nothing. It warns once
per model, naming the layers and what to do, and not once they have seen a batch or trained weights."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

import revstudio  # noqa: E402
from revstudio.compiler.first_batch import UninitializedActNorm  # noqa: E402
from revstudio.core.generate import glow_repeat  # noqa: E402


def _fresh(copies: int = 1):
    torch.manual_seed(0)
    return revstudio.compile(glow_repeat(copies), device="cpu")


def _warned(model, z) -> list[str]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        model.inverse(z)
    return [str(w.message) for w in seen if issubclass(w.category, UninitializedActNorm)]


@pytest.mark.parametrize("mode", ["standard", "reversible", "checkpoint"])
def test_inverse_of_a_fresh_flow_warns_once_naming_the_actnorm_layers(mode: str) -> None:
    model = _fresh(2)
    model.mode = mode
    z = torch.randn(2, 12, 4, 4)
    first = _warned(model, z)
    assert len(first) == 1, first
    text = first[0]
    names = [p for p, m in model.named_modules() if type(m).__name__ == "ActNorm"]
    assert len(names) == 2 and all(repr(n) in text for n in names), text
    assert "never saw a batch" in text and "run one forward batch" in text and "load_state_dict" in text, text
    assert _warned(model, z) == []  # once per model


def test_no_warning_after_a_forward_batch_or_trained_weights() -> None:
    model = _fresh()
    x = torch.randn(4, 3, 8, 8)
    model(x)
    assert _warned(model, torch.randn(2, 12, 4, 4)) == []
    other = _fresh()
    other.load_state_dict(model.state_dict())
    assert _warned(other, torch.randn(2, 12, 4, 4)) == []
    again = _fresh()
    again.load_state_dict(_fresh().state_dict())  # weights saved before any batch: still the identity
    assert len(_warned(again, torch.randn(2, 12, 4, 4))) == 1
