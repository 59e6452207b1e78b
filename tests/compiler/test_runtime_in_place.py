"""The runtime's in-place updates: only buffers it made itself are overwritten.

Regions built directly from runtime steps (a split, couplings, a concat) are
checked against the same arithmetic under plain autograd, with float32,
float64 and compensated float32 pair streams, including couplings whose F hands its gradient straight
through (the runtime must not then add into a gradient that is shared).
"""
from __future__ import annotations

import pytest
import torch
from torch import nn

from revstudio.compiler import runtime as rt

torch.set_num_threads(1)


class _Scale(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.linspace(0.5, 1.5, channels).view(1, channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x * self.w)


def _region(f: nn.Module, g: nn.Module, blocks: int, identity_at: int | None) -> tuple[rt.Region, list]:
    """``blocks`` RevNet blocks over two 2-channel halves; block ``identity_at`` has F = identity."""
    steps: list[rt.Step] = [rt.Slice(0, [1, 2], [2, 2])]
    x1, x2, nxt = 1, 2, 3
    fns = []
    for i in range(blocks):
        fi = (lambda x: x) if i == identity_at else f
        steps.append(rt.Coupling(x1, [x2], nxt, 1, fi, [] if i == identity_at else [f]))
        steps.append(rt.Coupling(x2, [nxt], nxt + 1, -1 if i % 2 else 1, g, [g]))
        fns.append((fi, -1 if i % 2 else 1))
        x1, x2, nxt = nxt, nxt + 1, nxt + 2
    steps.append(rt.Cat([x1, x2], nxt, [2, 2]))
    return rt.Region("r", steps, [0], [nxt]), fns


def _plain(x: torch.Tensor, g: nn.Module, fns: list) -> torch.Tensor:
    x1, x2 = x[:, :2], x[:, 2:]
    for fi, sign in fns:
        x1 = x1 + fi(x2)
        x2 = x2 + sign * g(x1)
    return torch.cat([x1, x2], 1)


@pytest.mark.parametrize("stream", [torch.float32, torch.float64, rt.FLOAT32X2])
@pytest.mark.parametrize("identity_at", [None, 0, 2])
def test_in_place_runtime_matches_plain_autograd(stream: torch.dtype, identity_at: int | None) -> None:
    torch.manual_seed(0)
    f, g = _Scale(2), nn.Conv2d(2, 2, 3, padding=1)
    region, fns = _region(f, g, 3, identity_at)
    x = torch.randn(3, 4, 5, 5, requires_grad=True)
    weight = torch.randn(3, 4, 5, 5)
    before = x.detach().clone()
    params = [*f.parameters(), *g.parameters()]

    ref = _plain(x, g, fns)
    ref_grads = torch.autograd.grad((ref * weight).sum(), [x, *params])

    (y,) = region([x], "reversible", torch.float32, stream)
    assert torch.equal(x.detach(), before)  # the caller's input is never overwritten
    out_before = y.detach().clone()
    grads = torch.autograd.grad((y * weight).sum(), [x, *params])
    assert torch.equal(y.detach(), out_before)  # nor the output handed to the caller
    assert torch.allclose(y, ref, atol=1e-5)
    for got, want in zip(grads, ref_grads):
        assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("stream", [torch.float64, rt.FLOAT32X2])
def test_a_second_backward_sees_the_same_streams(stream: torch.dtype | str) -> None:
    """retain_graph: the residuals that restore the wide streams are kept for the next pass."""
    torch.manual_seed(1)
    f, g = _Scale(2), nn.Conv2d(2, 2, 3, padding=1)
    region, _ = _region(f, g, 2, None)
    x = torch.randn(2, 4, 4, 4, requires_grad=True)
    (y,) = region([x], "reversible", torch.float32, stream)
    loss = (y * y).sum()
    first = torch.autograd.grad(loss, [x, g.weight], retain_graph=True)
    second = torch.autograd.grad(loss, [x, g.weight])
    for a, b in zip(first, second):
        assert torch.equal(a, b)


def test_no_grad_inference_leaves_its_input_alone() -> None:
    torch.manual_seed(2)
    f, g = _Scale(2), nn.Conv2d(2, 2, 3, padding=1)
    region, fns = _region(f, g, 2, 1)
    x = torch.randn(2, 4, 4, 4)
    before = x.clone()
    with torch.no_grad():
        (y,) = region([x], "reversible", torch.float32, torch.float32)
        ref = _plain(x, g, fns)
    assert torch.equal(x, before)
    assert torch.allclose(y, ref, atol=1e-6)


@pytest.mark.parametrize("stream", [torch.float32, torch.float64, rt.FLOAT32X2])
def test_an_output_edited_in_place_after_forward_is_refused(stream: torch.dtype) -> None:
    """The rebuild starts from the outputs: an in-place edit by the caller would silently give
    wrong activations, so backward refuses it with the region and the fix named."""
    torch.manual_seed(3)
    f, g = _Scale(2), nn.Conv2d(2, 2, 3, padding=1)
    region, _ = _region(f, g, 2, None)
    x = torch.randn(2, 4, 4, 4, requires_grad=True)
    (y,) = region([x], "reversible", torch.float32, stream)
    y.mul_(2)
    with pytest.raises(RuntimeError, match=r"region 'r'.*output 0.*in-place.*out-of-place"):
        y.sum().backward()


@pytest.mark.parametrize("stream", [torch.float32, torch.float64, rt.FLOAT32X2])
def test_the_kept_outputs_are_let_go_once_the_streams_are_rebuilt(stream: torch.dtype) -> None:
    """Backward drops its reference to the region's outputs as soon as it has read them (not
    at its end); kept when the graph is retained for another pass."""
    torch.manual_seed(4)
    f, g = _Scale(2), nn.Conv2d(2, 2, 3, padding=1)
    region, fns = _region(f, g, 2, None)
    x = torch.randn(2, 4, 4, 4, requires_grad=True)
    w = torch.randn(2, 4, 4, 4)
    (y,) = region([x], "reversible", torch.float32, stream)
    node = y.grad_fn
    loss = (y * w).sum()
    del y
    (gx_kept,) = torch.autograd.grad(loss, [x], retain_graph=True)
    assert node.outs is not None
    (gx,) = torch.autograd.grad(loss, [x])
    assert node.outs is None
    xr = x.detach().requires_grad_(True)
    (ref,) = torch.autograd.grad((_plain(xr, g, fns) * w).sum(), [xr])
    assert torch.allclose(gx, ref, atol=1e-5)
    assert torch.equal(gx, gx_kept)


def test_a_narrow_update_widens_a_small_piece_at_a_time() -> None:
    """Adding a float32 F to a float64 stream in place widens F piece by piece along the batch:
    the widened piece is alive next to the stream at the peak, so it stays well under the
    stream's size even for streams smaller than one chunk."""
    from torch.utils._python_dispatch import TorchDispatchMode

    widened: list[int] = []

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            if isinstance(out, torch.Tensor) and out.dtype == torch.float64:
                widened.append(out.numel() * out.element_size())
            return out

    y = torch.zeros(8, 8, 16, 16, dtype=torch.float64)  # 128 KiB: below one 256 KiB chunk
    f = torch.randn(8, 8, 16, 16)
    with Watch():
        out = rt._update(y, f, 1, True)
    assert out is y and torch.equal(y, f.double())
    copies = [n for n in widened if n != y.numel() * y.element_size()]
    assert copies and max(copies) <= y.numel() * y.element_size() // 8


def test_a_rearranging_step_leaves_the_streams_the_runtimes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Reshape (Permute, Squeeze, Flatten) only rearranges the runtime's own buffers, so the
    updates before it (in backward: after it) stay in place: none makes new buffers, and the
    reversible step peaks below standard mode's (it peaked 1.2x above it before)."""
    from revstudio.compiler import compile as compile_graph
    from revstudio.compiler import runtime_streams
    from revstudio.core.generate import revnet_chain
    from revstudio.diagnostics.memory import compare_modes

    graph = revnet_chain(3, channels=8, size=8, flatten=True)
    torch.manual_seed(0)
    model = compile_graph(graph, device="cpu")
    model.train()
    x = torch.randn(8, 8, 8, 8)
    (region,) = model.plan.regions.regions
    assert region.steps[-1] == "flat"
    made: list[int] = []
    two_sum = runtime_streams._two_sum
    monkeypatch.setattr(runtime_streams, "_two_sum", lambda *a: made.append(1) or two_sum(*a))
    peaks = compare_modes(model, [x], ("standard", "reversible"))
    assert made == []  # every pair update in place
    assert peaks["reversible"]["peak_bytes"] < 0.8 * peaks["standard"]["peak_bytes"]

    model64 = compile_graph(graph, device="cpu", dtype=torch.float64)
    model64.train()
    grads = {}
    for mode in ("standard", "reversible"):
        model64.mode = mode
        model64.zero_grad(set_to_none=True)
        x64 = x.double().requires_grad_(True)
        (model64(x64) * torch.linspace(-1, 1, 10, dtype=torch.float64)).sum().backward()
        grads[mode] = [x64.grad, *(p.grad for p in model64.parameters())]
    for a, b in zip(grads["reversible"], grads["standard"]):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)
