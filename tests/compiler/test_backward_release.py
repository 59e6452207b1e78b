"""A region's backward lets go of what it rebuilt for the caller: the input it freed in forward
and restored (the layer before may have saved it), its side inputs and its error samples go
with their last other holder. They stayed on the Function's context until the whole backward
ended, so a region's restored input outlived it through the backward of every region before
it (two wired blocks around an average pool, reversible mode: 5.2 % above the estimate, now
equal to it)."""
from __future__ import annotations

import weakref

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.core.generate import Builder, wired_block  # noqa: E402


def _two_regions():
    b = Builder("two-regions")
    b.node("Input", "x", shape=[3, 8, 8])
    src = b.chain("x.out", b.node("Conv", "stem", out_channels=8, kernel_size=3, padding="same"))
    src = wired_block(b, src, "w1", 8)
    src = b.chain(src, b.node("Pool", "down", kind="avg", kernel_size=2))
    src = wired_block(b, src, "w2", 8)
    b.chain(src, b.node("Pool", "pool", kind="global_avg"), b.node("Linear", "head", out_features=10),
            b.node("Output", "out"))
    return b.done()


def test_a_regions_restored_input_is_gone_before_the_region_before_it_runs_backward() -> None:
    torch.manual_seed(0)
    model = compile_graph(_two_regions(), mode="reversible")
    model.train()
    between: list[weakref.ref] = []  # the second region's input (the pool's output)
    seen: list[bool] = []

    def keep_ref(module, inputs, out) -> None:  # (modules return tuples)
        between.append(weakref.ref(out[0]))

    def look(module, inputs, out) -> None:
        # the stem's output's gradient arrives once the first region's backward has run
        out[0].register_hook(lambda g: seen.append(between[0]() is not None))

    model.down.register_forward_hook(keep_ref)
    model.stem.register_forward_hook(look)
    out = model(torch.randn(4, 3, 8, 8))
    out.sum().backward()
    assert seen == [False]
    assert all(p.grad is not None for p in model.parameters())


def test_a_kept_graph_keeps_what_a_second_backward_reads() -> None:
    torch.manual_seed(0)
    model = compile_graph(_two_regions(), mode="reversible")
    model.train()
    x = torch.randn(4, 3, 8, 8)
    loss = model(x).square().sum()
    first = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
    second = torch.autograd.grad(loss, list(model.parameters()))
    for a, b in zip(first, second):
        torch.testing.assert_close(a, b)
