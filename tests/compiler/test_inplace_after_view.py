"""An in-place activation reading a view (a Permute of kind axes, a Reshape, a Flatten) of a value
someone else reads, or of the caller's batch, gets a copy: writing into the view would change
that value under its other readers."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import revstudio  # noqa: E402
from revstudio.core.generate import Builder  # noqa: E402

VIEWS = {"permute": ("Permute", {"kind": "axes", "dims": [1, 0]}), "reshape": ("Reshape", {"shape": [6, 4]}),
         "flatten": ("Flatten", {})}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_a_value_read_twice_is_not_overwritten_through_a_view(view: str) -> None:
    kind, params = VIEWS[view]
    b = Builder("inplace-view")
    b.node("Input", "x", shape=[4, 6])
    b.node("Conv", "c", out_channels=4, kernel_size=1)
    b.node(kind, "v", **params)
    b.node("Activation", "a", fn="relu", inplace=True)
    b.node("Flatten", "f1")
    b.node("Flatten", "f2")
    b.node("Merge", "m", mode="concat")
    b.node("Output", "y")
    b.chain("x.out", "c", "v", "a", "f1")
    b.chain("c.out", "f2")
    b.wire("f1.out", "m.in0")
    b.wire("f2.out", "m.in1")
    b.chain("m.out", "y")
    torch.manual_seed(0)
    model = revstudio.compile(b.done(), device="cpu", mode="standard")
    x = torch.randn(2, 4, 6)
    with torch.no_grad():
        y = model(x)
        conv = model.c(x)[0]
    assert torch.equal(y[:, 24:], conv.flatten(1))  # the Conv's output as made, not its ReLU


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_the_callers_batch_is_not_overwritten_through_a_view(view: str) -> None:
    kind, params = VIEWS[view]
    b = Builder("inplace-input-view")
    b.node("Input", "x", shape=[4, 6])
    b.node(kind, "v", **params)
    b.node("Activation", "a", fn="relu", inplace=True)
    b.node("Flatten", "f")
    b.node("Linear", "fc", out_features=3)
    b.node("Output", "y")
    b.chain("x.out", "v", "a", "f", "fc", "y")
    model = revstudio.compile(b.done(), device="cpu", mode="standard")
    x = torch.randn(2, 4, 6)
    before = x.clone()
    with torch.no_grad():
        model(x)
    assert torch.equal(x, before)
