"""A Permute of kind axes in every mode: between two RevNet blocks of one reversible region, and
inside a coupling's F; standard, checkpoint and reversible mode agree, and a flow whose steps
reorder the axes inverts back to its input."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import revstudio  # noqa: E402
from revstudio.core.generate import Builder, _body, wired_block  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402

MODES = ("standard", "checkpoint", "reversible")


def _permute_between_blocks(name: str, image: str, shape: list[int], dims: list[int], after: int,
                            first: list[int] | None = None) -> Graph:
    """Input ``shape`` -> (Permute ``first``, ``to_channels``) -> stem -> block on 8 channels -> Permute
    ``dims`` (``swap``) -> block on ``after`` channels -> pool -> head."""
    b = Builder(name)
    b.node("Input", image, shape=shape)
    lead = []
    if first is not None:
        b.node("Permute", "to_channels", kind="axes", dims=first)
        lead = ["to_channels"]
    b.node("Conv", "stem", out_channels=8, kernel_size=3, padding="same")
    src = wired_block(b, b.chain(f"{image}.out", *lead, "stem"), "b0", 8)
    b.node("Permute", "swap", kind="axes", dims=dims)
    src = wired_block(b, b.chain(src, "swap"), "b1", after)
    b.node("Pool", "pool", kind="global_avg")
    b.node("Linear", "head", out_features=3)
    b.node("Output", "logits")
    b.chain(src, "pool", "head", "logits")
    return b.done()


def between_blocks() -> Graph:
    """(time 16, features 6) -> Permute -> stem -> block on 8 channels -> Permute -> block on 16."""
    return _permute_between_blocks("axes-between-blocks", "tokens", [16, 6], [1, 0], 16, first=[1, 0])


def three_axes() -> Graph:
    """(3, 6, 10) -> stem -> block on 8 channels -> Permute [2, 0, 1] -> block on 10: the region's
    streams are channels_last on the CPU, the reordered view neither layout."""
    return _permute_between_blocks("axes-three", "image", [3, 6, 10], [2, 0, 1], 10)


def inside_f(flow: bool = False) -> Graph:
    """Two AdditiveCouplings on 8x8 whose F reorders the axes, mixes, and reorders them back."""
    b = Builder("axes-inside-f")

    def f(bb: Builder, s: str) -> str:
        bb.node("Permute", "t1", kind="axes", dims=[1, 0])
        bb.node("Conv", "mix", out_channels=8, kernel_size=1)
        bb.node("Activation", "act", fn="tanh")
        bb.node("Permute", "t2", kind="axes", dims=[1, 0])
        return bb.chain(s, "t1", "mix", "act", "t2")

    b.graph.groups["F"] = _body("F", f)
    b.node("Input", "x", shape=[8, 8])
    b.node("AdditiveCoupling", "c0", f="F", g="F")
    b.node("Permute", "swap", kind="axes", dims=[1, 0])
    b.node("AdditiveCoupling", "c1", f="F")
    src = b.chain("x.out", "c0", "swap", "c1")
    if flow:
        b.node("Output", "z")
        b.chain(src, "z")
    else:
        b.node("Flatten", "flat")
        b.node("Linear", "head", out_features=3)
        b.node("Output", "logits")
        b.chain(src, "flat", "head", "logits")
    return b.done()


def _step(model, x, mode: str):  # type: ignore[no-untyped-def]
    model.mode = mode
    model.zero_grad(set_to_none=True)
    xi = x.clone().requires_grad_(True)
    y = model(xi)
    (y * torch.linspace(-1, 1, y.numel(), dtype=y.dtype).view_as(y)).sum().backward()
    return [y.detach(), xi.grad, *(p.grad for p in model.parameters())]


@pytest.mark.parametrize("make", [between_blocks, three_axes, inside_f], ids=["between-blocks", "three-axes", "inside-f"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
def test_every_mode_gives_standard_modes_outputs_and_gradients(make, dtype) -> None:  # type: ignore[no-untyped-def]
    graph = make()
    report = full_check(graph, batch=4)
    assert report.valid, [str(d) for d in report.errors]
    (region,) = report.regions
    assert {"swap"} <= set(region.nodes), region.nodes  # the reorder runs inside the region
    torch.manual_seed(0)
    model = revstudio.compile(graph, dtype=dtype, device="cpu")
    x = torch.randn(4, *report.shape(f"{next(iter(graph.nodes))}.out"), dtype=dtype)
    ref = _step(model, x, "standard")
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for mode in ("checkpoint", "reversible"):
        got = _step(model, x, mode)
        for a, r in zip(got, ref):
            assert float((a - r).abs().max()) <= tol * max(1.0, float(r.abs().max())), mode


def test_a_flow_that_reorders_axes_inverts_back_to_its_input() -> None:
    graph = inside_f(flow=True)
    torch.manual_seed(0)
    model = revstudio.compile(graph, dtype=torch.float64, device="cpu", mode="reversible")
    x = torch.randn(3, 8, 8, dtype=torch.float64)
    with torch.no_grad():
        z = model(x)
        assert z.shape == x.shape and not torch.allclose(z, x)
        back = model.inverse(z)
    assert float((back - x).abs().max()) < 1e-12
