"""Reversible vs standard autograd: same weights, same batch, same random streams, same gradients."""
from __future__ import annotations

import weakref
from collections.abc import Callable

import pytest
import torch
from compiler_graphs import (
    coupling_repeat,
    glow,
    nested_quarter,
    nested_repeat,
    plain_chain,
    two_stream_group,
    wired_revnet,
)

import revstudio.compiler as C
from revstudio.core.graph import Graph

torch.set_num_threads(1)


def _peek() -> Graph:
    g = wired_revnet(1)
    g.add_node("Output", "peek")
    g.connect("b0fa.out", "peek.in")
    return g


GRAPHS: dict[str, Callable[[], Graph]] = {
    "wired": lambda: wired_revnet(3, stem=True),
    "wired_dropout": lambda: wired_revnet(2, extra="Dropout"),
    "wired_batchnorm": lambda: wired_revnet(2, extra="Norm"),
    "coupling_repeat_dropout": lambda: coupling_repeat(3, extra={"type": "Dropout", "params": {"p": 0.4}}, head=True),
    "coupling_repeat_batchnorm": lambda: coupling_repeat(2, extra={"type": "Norm"}),
    "nested_quarter_inplace": lambda: nested_quarter(inplace_before=True),
    "repeat_in_a_group": nested_repeat,
    "two_stream_group": two_stream_group,
    "peek": _peek,
    "glow": glow,
    "plain_chain": plain_chain,  # no region: checkpoint mode recomputes the ordinary ops
}


def _inputs(model: C.CompiledModel, batch: int = 3, requires_grad: bool = True) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    return [torch.randn(batch, *op.shape, generator=gen, dtype=torch.float64).requires_grad_(requires_grad)
            for op in model.plan.inputs]


def _step(model: C.CompiledModel, mode: str, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    """One training step's forward + backward; returns input and parameter gradients."""
    model.mode = mode
    model.zero_grad(set_to_none=True)
    for x in xs:
        x.grad = None
    torch.manual_seed(123)  # same dropout masks in every mode
    outs = model(*xs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    weights = torch.Generator().manual_seed(2)
    loss = sum((o * torch.randn(o.shape, generator=weights, dtype=o.dtype)).sum() for o in outs)
    loss.backward()
    grads = [x.grad if x.grad is not None else torch.zeros_like(x) for x in xs]
    return grads + [p.grad if p.grad is not None else torch.zeros_like(p) for p in model.parameters()]


def _max_rel(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max(float((x - y).abs().max() / y.abs().max().clamp_min(1e-12)) for x, y in zip(a, b))


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_reversible_gradients_match_standard_in_float64(name: str) -> None:
    torch.manual_seed(0)
    model = C.compile(GRAPHS[name](), dtype=torch.float64, device="cpu")
    model.train()
    xs = _inputs(model)
    standard = _step(model, "standard", xs)
    reversible = _step(model, "reversible", xs)
    checkpoint = _step(model, "checkpoint", xs)
    assert _max_rel(reversible, standard) < 1e-10
    assert _max_rel(checkpoint, standard) < 1e-10
    assert any(float(g.abs().max()) > 0 for g in standard)  # the comparison is not vacuous


def test_dropout_masks_are_replayed_not_redrawn() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(2, extra="Dropout"), dtype=torch.float64, device="cpu")
    xs = _inputs(model)
    a = _step(model, "reversible", xs)
    torch.manual_seed(5)
    b = _step(model, "reversible", xs)
    assert _max_rel(a, b) < 1e-12  # _step reseeds: identical; a redrawn mask would differ
    model.mode = "reversible"
    torch.manual_seed(123)
    model(*xs).sum().backward()
    after = torch.rand(1)
    torch.manual_seed(123)
    model.mode = "standard"
    model(*xs).sum().backward()
    assert torch.equal(after, torch.rand(1))  # backward leaves the caller's random stream alone


def test_batchnorm_running_stats_update_once_per_step() -> None:
    torch.manual_seed(0)
    stats = {}
    for mode in ("standard", "reversible", "checkpoint"):
        torch.manual_seed(0)
        model = C.compile(wired_revnet(2, extra="Norm"), dtype=torch.float64, device="cpu")
        _step(model, mode, _inputs(model))
        bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        assert bns and all(int(m.num_batches_tracked) == 1 for m in bns)
        stats[mode] = torch.cat([torch.cat([m.running_mean, m.running_var]) for m in bns])
    assert torch.allclose(stats["reversible"], stats["standard"], rtol=0, atol=1e-12)
    assert torch.allclose(stats["checkpoint"], stats["standard"], rtol=0, atol=1e-12)


def test_inputs_that_do_not_require_grad() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(2, stem=False), dtype=torch.float64, device="cpu")
    xs = _inputs(model, requires_grad=False)
    standard = _step(model, "standard", xs)
    reversible = _step(model, "reversible", xs)
    assert _max_rel(reversible[1:], standard[1:]) < 1e-10
    assert xs[0].grad is None


def test_autograd_grad_and_a_second_backward() -> None:
    torch.manual_seed(0)
    model = C.compile(coupling_repeat(2), dtype=torch.float64, device="cpu")
    (x,) = _inputs(model)
    model.mode = "standard"
    ref_x, ref_w = torch.autograd.grad(model(x).square().sum(), [x, model.rep.blocks[0].ac.f.conv.weight])
    model.mode = "reversible"
    y = model(x).square().sum()
    gx, gw = torch.autograd.grad(y, [x, model.rep.blocks[0].ac.f.conv.weight], retain_graph=True)
    assert torch.allclose(gx, ref_x, atol=1e-12) and torch.allclose(gw, ref_w, atol=1e-12)
    assert model.rep.blocks[0].ac.f.conv.weight.grad is None  # autograd.grad fills nothing in
    y.backward(retain_graph=True)
    y.backward()  # a second backward over the same graph gives the same gradients again
    assert torch.allclose(x.grad, 2 * ref_x, atol=1e-12)


def test_caller_tensors_are_never_freed_or_changed() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(2), dtype=torch.float64, device="cpu")
    (x,) = _inputs(model)
    before = x.detach().clone()
    y = model(x)
    assert x.untyped_storage().nbytes() == x.numel() * 8 and torch.equal(x.detach(), before)
    y.sum().backward()
    assert torch.equal(x.detach(), before)


def test_region_inputs_made_inside_are_released_and_restored() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(2, stem=True), dtype=torch.float64, device="cpu")
    (x,) = _inputs(model)
    seen = {}
    # a weak reference watches the stem's output without holding it (a strong one would keep
    # it: see test_caller_habits)
    model.stem.register_forward_hook(lambda m, i, o: seen.update(stem=weakref.ref(o[0])))
    model.mode = "reversible"
    y = model(x)
    stem = seen["stem"]()
    assert stem is not None and stem.untyped_storage().nbytes() == 0  # nothing else reads it: released
    storage = stem.untyped_storage()
    del stem
    y.sum().backward()
    assert storage.nbytes() > 0  # rebuilt for the graph that saved it
    expected = model.stem(x)[0]
    restored = torch.empty(0, dtype=expected.dtype).set_(storage).view_as(expected)
    assert torch.allclose(restored, expected, atol=1e-12)


def test_inversion_error_is_measured_per_region() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(3), dtype=torch.float64, device="cpu")
    (x,) = _inputs(model)
    assert model.inversion_errors() == {}
    model(x).sum().backward()
    errors = model.inversion_errors()
    assert set(errors) == {"region-b0s"} and 0 <= errors["region-b0s"] < 1e-12
    on_demand = model.measure_inversion(x)
    assert set(on_demand) == {"region-b0s"} and on_demand["region-b0s"] < 1e-12


def _stream_read_after_it_is_consumed() -> Graph:
    """Region input A is consumed by a Permute before a coupling's F reads it (A is also read
    outside, so that order is allowed): the region must keep A for backward."""
    g = Graph("side")
    g.add_node("Input", "x", {"shape": [4, 4, 4]})
    g.add_node("Conv", "pre_a", {"out_channels": 2, "kernel_size": 1})
    g.add_node("Conv", "pre_b", {"out_channels": 2, "kernel_size": 1})
    g.add_node("Permute", "p", {"kind": "reverse"})
    g.add_node("Conv", "f", {"out_channels": 2, "kernel_size": 3, "padding": "same"})
    g.add_node("Merge", "m", {"mode": "add"})
    g.add_node("Concat", "c", {})
    g.add_node("Conv", "other", {"out_channels": 2, "kernel_size": 1})
    g.add_node("Output", "y")
    g.add_node("Output", "z")
    for a, b in (("x.out", "pre_a.in"), ("x.out", "pre_b.in"), ("pre_a.out", "p.in"), ("pre_a.out", "f.in"),
                 ("pre_b.out", "m.in0"), ("f.out", "m.in1"), ("m.out", "c.in0"), ("p.out", "c.in1"),
                 ("c.out", "y.in"), ("pre_a.out", "other.in"), ("other.out", "z.in")):
        g.connect(a, b)
    return g


def test_a_stream_consumed_before_f_reads_it_is_kept() -> None:
    torch.manual_seed(0)
    model = C.compile(_stream_read_after_it_is_consumed(), dtype=torch.float64, device="cpu")
    (region,) = model.plan.regions.regions
    assert region.steps == ["p", "m", "c"] and region.side == ["pre_a.out"]
    xs = _inputs(model)
    assert _max_rel(_step(model, "reversible", xs), _step(model, "standard", xs)) < 1e-10
