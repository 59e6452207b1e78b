"""An odd channel count: torch.chunk(x, 2) (MemCNN, RevLib) gives x1 the larger part, the
couplings' split 0 the smaller, so a ported F misses by a channel; the message says which split
makes the two agree, and that split computes what the chunked model does."""
from __future__ import annotations

import pytest

import revstudio as rs


def _body(out_channels: int) -> rs.Graph:
    b = rs.Graph()
    b.add_node("GroupInput", "in")
    b.add_node("Conv", "conv", {"out_channels": out_channels, "kernel_size": 3, "padding": "same"})
    b.add_node("GroupOutput", "out")
    b.connect("in.out", "conv.in")
    b.connect("conv.out", "out.in")
    return b


def _ported(channels: int, split: int = 0) -> rs.Graph:
    """A coupling whose F maps x2 to x1's channels and G y1 to x2's as torch.chunk splits them."""
    x1 = channels - channels // 2
    g = rs.Graph()
    g.add_node("Input", "x", {"shape": [channels, 6, 6]})
    g.add_node("AdditiveCoupling", "c", {"f": "f", "g": "g", "split": split})
    g.add_node("Output", "y")
    g.connect("x.out", "c.in")
    g.connect("c.out", "y.in")
    g.set_group("f", _body(x1))
    g.set_group("g", _body(channels - x1))
    return g


def test_an_odd_channel_count_names_the_split_torch_chunk_makes() -> None:
    errors = [d.message for d in rs.check(_ported(7)).errors]
    assert len(errors) == 1
    assert "needs 3x6x6; make its last layer output 3 channels with the same spatial size" in errors[0]
    assert ("or, for x1 = the first 4 channels as torch.chunk(x, 2) splits 7 (MemCNN, RevLib), "
            "set split to 4 (0 gives x1 3)") in errors[0]


@pytest.mark.parametrize("channels, split", [(8, 0), (7, 3)])
def test_no_such_advice_where_the_split_is_chosen_or_the_halves_are_equal(channels: int, split: int) -> None:
    g = _ported(channels, split)
    g.groups["f"].set_param("conv", "out_channels", 1)
    errors = [d.message for d in rs.check(g).errors]
    assert len(errors) == 1 and "make its last layer output" in errors[0] and "torch.chunk" not in errors[0]


def test_the_split_the_message_names_computes_what_torch_chunk_does() -> None:
    torch = pytest.importorskip("torch")
    g = _ported(7, split=4)
    assert rs.check(g).valid
    model = rs.compile(g, device="cpu", dtype=torch.float64)
    f = dict(model.named_modules())["c.f.conv"]
    gm = dict(model.named_modules())["c.g.conv"]
    x = torch.randn(2, 7, 6, 6, dtype=torch.float64)
    x1, x2 = torch.chunk(x, 2, dim=1)
    y1 = x1 + f(x2)[0]
    want = torch.cat([y1, x2 + gm(y1)[0]], dim=1)
    assert torch.allclose(model(x), want, rtol=0, atol=1e-12)
