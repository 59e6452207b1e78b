"""A region's incoming gradients are released once its steps stop reading them, never earlier.

The region's backward spans all its blocks; autograd hands it the gradients of its outputs
and reads them no more, so the runtime lets each go (shrinking its storage) once nothing of
its own refers to it, where a Function per block would have dropped it after the last block.
A gradient someone else can still see (a hook kept it, the caller passed it, two outputs got
the same tensor, a node hook will read it) is left alone, and the gradients stay exact.
"""
from __future__ import annotations

import pytest
import torch
from test_runtime_in_place import _plain, _region, _Scale
from torch import nn

from revstudio.compiler import runtime as rt
from revstudio.compiler import runtime_function as rf
from revstudio.diagnostics.memory import LiveTensorTracker

torch.set_num_threads(1)


class _Case:
    """Three RevNet blocks (``_region``), a batch, the loss weights and the plain reference."""

    def __init__(self, seed: int) -> None:
        torch.manual_seed(seed)
        f, self.g = _Scale(2), nn.Conv2d(2, 2, 3, padding=1)
        self.region, self.fns = _region(f, self.g, 3, None)
        self.x = torch.randn(8, 4, 8, 8, requires_grad=True)
        self.w = torch.randn(8, 4, 8, 8)
        self.params = [*f.parameters(), *self.g.parameters()]

    def __call__(self, stream: torch.dtype | str = rt.FLOAT32X2) -> torch.Tensor:
        (y,) = self.region([self.x], "reversible", torch.float32, stream)
        return y

    def check(self, got: tuple) -> None:
        xr = self.x.detach().requires_grad_(True)
        want = torch.autograd.grad((_plain(xr, self.g, self.fns) * self.w).sum(), [xr, *self.params])
        for a, b in zip(got, want):
            assert torch.allclose(a, b, atol=1e-4, rtol=1e-4)


def _released(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the gradients ``_release_spent`` lets go (the spy holds no gradient itself)."""
    done: list[int] = []
    release = rf._release_spent

    def spy(spent: list[torch.Tensor], record: list[int] | None = None) -> list[torch.Tensor]:
        left = release(spent, record)
        done.append(len(spent) - len(left))
        return left

    monkeypatch.setattr(rf, "_release_spent", spy)
    return done


@pytest.mark.parametrize("stream", [torch.float32, torch.float64, rt.FLOAT32X2])
def test_the_incoming_gradient_goes_before_the_backward_ends(stream: torch.dtype | str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured: the step peaks lower (the gradient is gone for the earlier blocks; with float64
    streams this little region peaks while it is still read), with the same gradients bit for bit."""
    case = _Case(0)
    done = _released(monkeypatch)
    peaks, grads = {}, {}
    for on in (True, False):
        if not on:
            monkeypatch.setattr(rf, "_HOLDERS", [-1, -1])  # what the runtime did before
        grads[on] = torch.autograd.grad((case(stream) * case.w).sum(), [case.x, *case.params])
        with LiveTensorTracker(exact_resizes=True) as tracker:
            base = tracker.live_bytes()
            torch.autograd.grad((case(stream) * case.w).sum(), [case.x, *case.params])
            peaks[on] = tracker.peak_bytes - base
    for a, b in zip(grads[True], grads[False]):
        assert torch.equal(a, b)
    assert sum(done) == 2  # once per backward with the release on, never with it off
    assert peaks[True] < peaks[False] if stream != torch.float64 else peaks[True] <= peaks[False]
    case.check(grads[True])


def test_a_gradient_a_hook_kept_is_left_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    case = _Case(1)
    done = _released(monkeypatch)
    kept: list[torch.Tensor] = []
    y = case()
    y.register_hook(kept.append)
    got = torch.autograd.grad((y * case.w).sum(), [case.x, *case.params])
    assert sum(done) == 0
    assert torch.equal(kept[0], case.w)
    case.check(got)


def test_a_gradient_the_caller_passed_is_left_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    case = _Case(2)
    done = _released(monkeypatch)
    given = case.w.clone()
    got = torch.autograd.grad([case()], [case.x, *case.params], [given])
    assert sum(done) == 0
    assert torch.equal(given, case.w)
    case.check(got)


def test_a_node_hook_still_reads_the_gradient(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hook on the region's backward node gets its output gradients after the node ran."""
    case = _Case(3)
    done = _released(monkeypatch)
    seen: list[torch.Tensor] = []
    y = case()
    y.grad_fn.register_hook(lambda grad_in, grad_out: seen.append(grad_out[0].clone()))
    (y * case.w).sum().backward()
    assert sum(done) == 0
    assert torch.equal(seen[0], case.w)


def test_a_retained_output_gradient_stays_readable(monkeypatch: pytest.MonkeyPatch) -> None:
    case = _Case(4)
    done = _released(monkeypatch)
    y = case()
    y.retain_grad()
    (y * case.w).sum().backward()
    assert torch.equal(y.grad, case.w)
    assert sum(done) == 1  # (retain_grad keeps its own copy)


def test_one_gradient_for_two_outputs_is_left_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """``y1 + y2``: autograd hands the same tensor to both outputs of the region."""
    torch.manual_seed(5)
    f, g = _Scale(2), nn.Conv2d(2, 2, 3, padding=1)
    steps: list[rt.Step] = [rt.Slice(0, [1, 2], [2, 2]), rt.Coupling(1, [2], 3, 1, f, [f]),
                            rt.Coupling(2, [3], 4, 1, g, [g])]
    region = rt.Region("r", steps, [0], [3, 4])
    done = _released(monkeypatch)
    x = torch.randn(4, 4, 6, 6, requires_grad=True)
    w = torch.randn(4, 2, 6, 6)
    y1, y2 = region([x], "reversible", torch.float32, rt.FLOAT32X2)
    got = torch.autograd.grad(((y1 + y2) * w).sum(), [x, g.weight])
    assert sum(done) == 0
    xr = x.detach().requires_grad_(True)
    a1 = xr[:, :2] + f(xr[:, 2:])
    a2 = xr[:, 2:] + g(a1)
    want = torch.autograd.grad(((a1 + a2) * w).sum(), [xr, g.weight])
    for a, b in zip(got, want):
        assert torch.allclose(a, b, atol=1e-4, rtol=1e-4)


def test_a_second_backward_gets_its_own_gradient(monkeypatch: pytest.MonkeyPatch) -> None:
    case = _Case(6)
    done = _released(monkeypatch)
    loss = (case() * case.w).sum()
    first = torch.autograd.grad(loss, [case.x, *case.params], retain_graph=True)
    second = torch.autograd.grad(loss, [case.x, *case.params])
    assert sum(done) == 2
    for a, b in zip(first, second):
        assert torch.equal(a, b)


def test_the_probe_counts_this_pythons_holders() -> None:
    """The baseline comes from running the probe: two counts, the same at both moments
    (the steps have let go), so nothing is released on a guess."""
    rf._count_holders()
    assert len(rf._HOLDERS) == 2 and rf._HOLDERS[0] > 0
    assert rf._HOLDERS[0] == rf._HOLDERS[1]


def test_a_first_forward_in_inference_mode_leaves_the_count_for_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """No backward can run in inference mode, so the probe waits for a forward that can."""
    monkeypatch.setattr(rf, "_HOLDERS", [])
    case = _Case(7)
    with torch.inference_mode():
        case.region([case.x.detach()], "reversible", torch.float32, rt.FLOAT32X2)
    assert rf._HOLDERS == []
    done = _released(monkeypatch)
    case.check(torch.autograd.grad((case() * case.w).sum(), [case.x, *case.params]))
    assert len(rf._HOLDERS) == 2 and sum(done) == 1


def test_a_module_backward_hook_still_reads_the_gradient(monkeypatch: pytest.MonkeyPatch) -> None:
    """``register_full_backward_hook`` on a module around the region: its grad_output is read
    after the region's backward ran."""
    case = _Case(8)

    class Around(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.g = case.g

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            (y,) = case.region([x], "reversible", torch.float32, rt.FLOAT32X2)
            return y

    done = _released(monkeypatch)
    seen: list[torch.Tensor] = []
    around = Around()
    around.register_full_backward_hook(lambda module, grad_in, grad_out: seen.append(grad_out[0].clone()))
    (around(case.x) * case.w).sum().backward()
    assert sum(done) == 0
    assert torch.equal(seen[0], case.w)
