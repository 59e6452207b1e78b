"""Memory stays flat with depth; float32 gradients stay as accurate as plain autograd's;
autocast runs with the streams kept wide."""
from __future__ import annotations

import pytest
import torch
from compiler_graphs import nested_quarter, plain_chain, wired_revnet

import revstudio.compiler as C
from revstudio.diagnostics.memory import LiveTensorTracker

torch.set_num_threads(1)


def _kept_after_forward(blocks: int, mode: str, nested: bool = False) -> int:
    torch.manual_seed(0)
    graph = (nested_quarter(8, 8, blocks=blocks, inplace_before=True) if nested
             else wired_revnet(blocks, channels=4, size=8, stem=True))
    model = C.compile(graph, mode=mode, device="cpu")
    assert len(model.regions) == 1
    x = torch.randn(2, *model.plan.inputs[0].shape, requires_grad=True)
    model(x)  # initialisation and lazy imports happen outside the measurement
    with LiveTensorTracker(exact_resizes=True) as tracker:
        y = model(x)
        kept = tracker.live_bytes()
    y.sum().backward()  # the kept tensors really are enough for backward
    return kept


def test_kept_after_forward_is_flat_with_depth() -> None:
    shallow, deep = _kept_after_forward(4, "reversible"), _kept_after_forward(32, "reversible")
    assert shallow == deep > 0
    plain4, plain32 = _kept_after_forward(4, "standard"), _kept_after_forward(32, "standard")
    assert plain32 > 4 * plain4 and deep < plain4  # standard autograd grows with depth
    assert _kept_after_forward(2, "reversible", nested=True) == _kept_after_forward(8, "reversible", nested=True)


def _grads(model: C.CompiledModel, x: torch.Tensor) -> list[torch.Tensor]:
    model.zero_grad(set_to_none=True)
    y = model(x)
    (y * torch.linspace(-1, 1, y.numel(), dtype=y.dtype).view_as(y)).sum().backward()
    return [p.grad.double() for p in model.parameters()]


def _error(got: list[torch.Tensor], ref: list[torch.Tensor]) -> float:
    """Relative error of the whole gradient (all parameters) against the float64 reference."""
    diff = torch.cat([(g - r).flatten() for g, r in zip(got, ref)])
    return float(diff.norm() / torch.cat([r.flatten() for r in ref]).norm())


def test_float32_reversible_gradients_are_as_accurate_as_plain_autograd() -> None:
    torch.manual_seed(0)
    graph = wired_revnet(24, channels=4, size=6)
    model = C.compile(graph, device="cpu", dtype=torch.float32)
    ref_model = C.compile(graph, device="cpu", dtype=torch.float64)
    ref_model.load_state_dict(model.state_dict())
    x = torch.randn(2, 4, 6, 6)
    ref_model.mode = "standard"
    ref = _grads(ref_model, x.double())
    model.mode = "standard"
    plain = _error(_grads(model, x), ref)
    model.mode = "reversible"
    reversible = _error(_grads(model, x), ref)
    assert reversible <= 1.5 * plain, (reversible, plain)
    model.stream_dtype = torch.float32  # the usual approach: rebuild in float32
    narrow = _error(_grads(model, x), ref)
    assert reversible <= narrow


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16])
def test_autocast_runs_and_stays_close(low: torch.dtype) -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(3, channels=4, size=8), device="cpu")
    x = torch.randn(2, 4, 8, 8, requires_grad=True)
    results = {}
    for mode in ("standard", "reversible"):
        model.mode = mode
        model.zero_grad(set_to_none=True)
        x.grad = None
        with torch.autocast("cpu", dtype=low):
            y = model(x)
        assert y.dtype == torch.float32  # the residual streams never drop to the low precision
        y.square().sum().backward()
        results[mode] = [y.detach(), x.grad.clone()] + [p.grad.clone() for p in model.parameters()]
    for rev, std in zip(results["reversible"], results["standard"]):
        assert float((rev - std).norm() / std.norm()) < 5e-2
    model.mode = "standard"
    with torch.no_grad():
        full = model(x)
    assert not torch.equal(full, results["standard"][0])  # F really ran in the low precision
    errors = model.inversion_errors()
    assert errors and all(e < 1e-6 for e in errors.values())


def _step_peak(blocks: int, low: torch.dtype | None) -> int:
    from revstudio.diagnostics.memory import measure_step

    torch.manual_seed(0)
    model = C.compile(wired_revnet(blocks, channels=8, size=8, stem=True), device="cpu")

    def step(x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=low or torch.bfloat16, enabled=low is not None):
            return model(x)

    return measure_step(step, [torch.randn(4, *model.plan.inputs[0].shape)])["peak_bytes"]


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16])
def test_the_peak_under_autocast_grows_with_depth_only_by_the_weights_gradients(low: torch.dtype) -> None:
    """Autocast caches its low-precision copy of every leaf that requires grad until its context
    ends; a region's backward rebuilds its steps' inputs as such leaves, so one copy per layer
    that read them stayed for the whole region: the step's peak grew with the depth (5x
    the float32 growth here), which reversible mode exists to prevent."""
    fp32 = _step_peak(8, None) - _step_peak(2, None)  # the 6 more blocks' weight gradients
    low_growth = _step_peak(8, low) - _step_peak(2, low)
    assert 0 < low_growth <= fp32


def test_checkpoint_mode_recomputes_ordinary_ops() -> None:
    kept = {}
    for mode in ("standard", "checkpoint"):
        torch.manual_seed(0)
        model = C.compile(plain_chain(6, channels=4, size=8), mode=mode, device="cpu")
        x = torch.randn(2, 4, 8, 8, requires_grad=True)
        model(x)
        with LiveTensorTracker() as tracker:
            y = model(x)
            kept[mode] = tracker.live_bytes()
        y.sum().backward()
    assert kept["checkpoint"] * 4 < kept["standard"]
