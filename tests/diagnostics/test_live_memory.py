"""Exact live-tensor accounting on CPU, checked against allocations whose sizes we know."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from revstudio.diagnostics.memory import LiveTensorTracker, measure_step  # noqa: E402

F32 = 4


class _ScaledLinear(torch.nn.Module):
    """h = 2x (a new tensor Linear saves for backward), y = W h + b."""

    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(n_in, n_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x * 2)


def test_linear_saved_input_is_counted_exactly() -> None:
    torch.manual_seed(0)
    batch, n_in, n_out = 5, 8, 3
    model = _ScaledLinear(n_in, n_out)
    x = torch.randn(batch, n_in)
    result = measure_step(model, (x,))
    h, y, loss = batch * n_in * F32, batch * n_out * F32, F32
    assert result["kept_bytes"] == h + y + loss
    # backward adds the loss gradient (one element), W.grad and b.grad; x needs no grad
    assert result["peak_bytes"] == h + y + loss + F32 + n_out * n_in * F32 + n_out * F32
    assert result["seconds"] > 0


def test_weights_and_inputs_are_excluded() -> None:
    model = torch.nn.Linear(64, 64, bias=False)
    x = torch.randn(2, 64)  # saved by Linear, but owned by the caller
    result = measure_step(model, (x,))
    assert result["kept_bytes"] == 2 * 64 * F32 + F32  # output + loss only


def test_views_count_once_and_frees_are_seen() -> None:
    tracker = LiveTensorTracker()
    with tracker:
        a = torch.zeros(100)          # 400 bytes
        b = a[10:]                    # a view: no new memory
        c = a.exp()                   # 400 more
        assert tracker.current_bytes == 800
        del c
        assert tracker.current_bytes == 400
        a.add_(1)                     # in place: no new memory
        assert tracker.current_bytes == 400
        del a, b
        assert tracker.current_bytes == 0
    assert tracker.peak_bytes == 800


def test_tensors_kept_on_an_autograd_context_are_counted() -> None:
    class Keep(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # type: ignore[no-untyped-def]
            ctx.extra = x * 3  # kept on ctx, not via save_for_backward: hooks miss it
            return x.clone()

        @staticmethod
        def backward(ctx, g):  # type: ignore[no-untyped-def]
            return g * ctx.extra

    x = torch.randn(10, requires_grad=True)
    tracker = LiveTensorTracker()
    with tracker:
        y = Keep.apply(x)
        assert tracker.current_bytes == 2 * 10 * F32  # y and ctx.extra
        y.sum().backward()
        del y
    assert x.grad is not None


def test_storage_shrunk_in_place_stops_counting_when_exact() -> None:
    tracker = LiveTensorTracker(exact_resizes=True)
    with tracker:
        a = torch.ones(256)
        a.untyped_storage().resize_(0)  # how MemCNN frees an activation
        assert tracker.live_bytes() == 0
        b = torch.ones(16)
        assert tracker.current_bytes == 16 * F32
        del b
    assert tracker.peak_bytes == 256 * F32
    del a


def test_exact_tracking_reads_only_what_an_op_touches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exact resizes re-read the storage resized, not every live one after each allocation:
    that was allocations x live storages (a 256-step Glow's ``revstudio memory``: 70 s of CPU)."""
    tracker = LiveTensorTracker(exact_resizes=True)
    reads = [0]
    entry_bytes = type(tracker)._entry_bytes

    def counted(self: object, entry: object) -> int:
        reads[0] += 1
        return entry_bytes(self, entry)

    monkeypatch.setattr(type(tracker), "_entry_bytes", counted)
    kept = []
    with tracker:
        for _ in range(200):
            kept.append(torch.ones(8))
        assert reads[0] <= 200  # all alive: once per allocation was 20,100 reads
        kept[0].untyped_storage().resize_(0)
        kept[1].resize_(64)  # an in-place op that grows its storage
        assert tracker.live_bytes() == (198 * 8 + 64) * F32
    assert "resize_" not in vars(torch.UntypedStorage)  # the watch ends with the tracker
    del kept


def test_kept_bytes_grow_with_depth_in_plain_autograd() -> None:
    def chain(depth: int) -> torch.nn.Module:
        return torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh())
                                     for _ in range(depth)])

    x = torch.randn(4, 16)
    small = measure_step(chain(2), (x,))["kept_bytes"]
    large = measure_step(chain(6), (x,))["kept_bytes"]
    # per layer one 4x16 tensor stays: tanh's result, which tanh saves and the next Linear
    # saves as its input; the Linear output before tanh is not needed and is freed
    assert large - small == 4 * (4 * 16 * F32)


def _block(n: int) -> int:
    return -(-n // 512) * 512  # the CUDA caching allocator rounds blocks up to 512 bytes


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (allocator statistics)")
def test_cuda_uses_allocator_statistics() -> None:
    torch.manual_seed(0)
    batch, n_in, n_out = 64, 32, 16
    model = _ScaledLinear(n_in, n_out).cuda()
    x = torch.randn(batch, n_in, device="cuda")
    result = measure_step(model, (x,))
    h, y, loss = batch * n_in * F32, batch * n_out * F32, F32
    assert result["kept_bytes"] == _block(h) + _block(y) + _block(loss)
    assert result["peak_bytes"] >= result["kept_bytes"] + _block(n_out * n_in * F32)


# ---- what was alive at the peak -------------------------------------------------------

def test_peak_tensors_add_up_to_the_peak_and_name_their_op() -> None:
    torch.manual_seed(0)
    batch, n_in, n_out = 5, 8, 3
    model = _ScaledLinear(n_in, n_out)
    x = torch.randn(batch, n_in)
    result = measure_step(model, (x,), timing_runs=0, top=20)
    tensors = result["peak_tensors"]
    assert sum(t["bytes"] for t in tensors) == result["peak_bytes"]
    assert sum(result["peak_by_dtype"].values()) == result["peak_bytes"]
    assert result["peak_phase"] == "backward"
    largest = tensors[0]
    # h = 2x, saved by Linear: the biggest tensor, made by forward's mul in this file
    assert largest["bytes"] == batch * n_in * F32 and largest["op"] == "aten.mul"
    assert largest["shape"] == [batch, n_in] and largest["dtype"] == "float32"
    assert largest["grad_fn"] == "" and "test_live_memory.py" in largest["where"]
    assert "forward" in largest["where"]
    # W.grad is made inside backward by the Linear's autograd node
    w_grad = [t for t in tensors if t["shape"] == [n_out, n_in]]
    assert len(w_grad) == 1 and w_grad[0]["grad_fn"]


def test_peak_tensors_name_the_module_that_made_them() -> None:
    from collections import OrderedDict

    inner = torch.nn.Sequential(OrderedDict(scaled=_ScaledLinear(8, 6)))
    model = torch.nn.Sequential(OrderedDict(first=inner, act=torch.nn.Softplus()))
    result = measure_step(model, (torch.randn(4, 8),), timing_runs=0, top=50)
    by_op = {t["op"]: t["module"] for t in result["peak_tensors"] if not t["grad_fn"]}
    assert by_op["aten.mul"] == "first.scaled"  # h = 2x: the innermost named module wins
    assert by_op["aten.softplus"] == "act"
    # made by autograd's own nodes, outside any module's forward: no name
    assert all(t["module"] == "" for t in result["peak_tensors"] if t["grad_fn"])


def test_peak_listing_is_of_the_peak_not_of_the_end() -> None:
    tracker = LiveTensorTracker(explain=True)
    with tracker:
        tracker.phase = "grow"
        a = torch.zeros(1000)
        b = torch.zeros(500)
        del a                       # the peak (a + b) has passed
        tracker.phase = "shrunk"
        c = torch.zeros(10)
    listed = sorted(t["bytes"] for t in tracker.peak_tensors())
    assert listed == [500 * F32, 1000 * F32] and tracker.peak_phase == "grow"
    del b, c


def test_peak_listing_with_exact_resizes_sees_shrunk_storages() -> None:
    tracker = LiveTensorTracker(exact_resizes=True, explain=True)
    with tracker:
        a = torch.ones(256)
        a.untyped_storage().resize_(0)  # freed in place, with no finalizer to tell
        b = torch.ones(200)
        c = torch.ones(100)             # b + c = 1200 bytes: a new peak without a
    assert sorted(t["bytes"] for t in tracker.peak_tensors()) == [100 * F32, 200 * F32]
    assert tracker.peak_bytes == 300 * F32
    del a, b, c


def test_listing_needs_explain() -> None:
    tracker = LiveTensorTracker()
    with tracker:
        pass
    with pytest.raises(RuntimeError, match="explain=True"):
        tracker.peak_tensors()


# ---- honest timing: warm-up first, modes interleaved, median ------------------------------

class _Clock:
    """A fake clock the model advances: time is what the model says it costs."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _CostlyModes(torch.nn.Module):
    """Each mode costs a fixed time per step; the very first step of the process pays a
    large one-time cost, as lazy initialisation and allocator growth do."""

    COST = {"standard": 1.0, "reversible": 2.0, "checkpoint": 3.0}

    def __init__(self, clock: _Clock) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.clock, self.mode, self.calls = clock, "standard", []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.clock.now += self.COST[self.mode] + (50.0 if not self.calls else 0.0)
        self.calls.append(self.mode)
        return self.lin(x)


@pytest.mark.parametrize("order", [("standard", "reversible", "checkpoint"),
                                   ("checkpoint", "reversible", "standard"),
                                   ("reversible", "checkpoint", "standard")])
def test_first_mode_measured_does_not_pay_one_time_costs(order: tuple[str, ...],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from revstudio.diagnostics import memory

    clock = _Clock()
    monkeypatch.setattr(memory, "_clock", clock)
    model = _CostlyModes(clock)
    result = memory.compare_modes(model, (torch.randn(2, 4),), order, repeat=3)
    assert {m: r["seconds"] for m, r in result.items()} == model.COST
    assert model.mode == "standard"  # restored


def test_timed_steps_follow_a_warm_up_and_are_interleaved(monkeypatch: pytest.MonkeyPatch) -> None:
    from revstudio.diagnostics import memory

    clock = _Clock()
    monkeypatch.setattr(memory, "_clock", clock)
    model = _CostlyModes(clock)
    modes = ("standard", "reversible", "checkpoint")
    memory.compare_modes(model, (torch.randn(2, 4),), modes, repeat=3)
    s, r, c = modes
    warm, tracked, timed = model.calls[:3], model.calls[3:6], model.calls[6:]
    assert warm == list(modes) and tracked == list(modes)
    assert timed == [s, r, c, r, c, s, c, s, r]  # round-robin, each round starting one later


def test_measure_step_warms_up_before_it_times(monkeypatch: pytest.MonkeyPatch) -> None:
    from revstudio.diagnostics import memory

    clock = _Clock()
    monkeypatch.setattr(memory, "_clock", clock)
    model = _CostlyModes(clock)
    result = memory.measure_step(model, (torch.randn(2, 4),), timing_runs=2)
    assert len(model.calls) == 1 + 1 + 2  # warm-up, tracked step, timed steps
    assert result["seconds"] == 1.0


class _Inner(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 4


class _DeletesALocal(torch.nn.Module):
    """t = x * 2, u = t + b, t deleted, then a named module's output: t is gone before it."""

    def __init__(self) -> None:
        super().__init__()
        self.b = torch.nn.Parameter(torch.zeros(()))
        self.inner = _Inner()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x * 2
        u = t + self.b  # (an add keeps nothing for backward: t goes with its name)
        del t
        return self.inner(u)


def test_listing_the_peak_keeps_no_deleted_local_alive() -> None:
    # Naming a tensor's module read the running frames' locals; before Python 3.13 that is a
    # snapshot the frame keeps, so the outer forward's ``t`` outlived its ``del`` while the inner
    # module ran, and the listed peak was three tensors' worth where the step holds two.
    x = torch.randn(64, 256)
    model = _DeletesALocal()
    plain = measure_step(model, (x,), timing_runs=0)["peak_bytes"]
    listed = measure_step(model, (x,), timing_runs=0, top=5)
    assert 2 * x.numel() * F32 <= plain < 2 * x.numel() * F32 + 64  # u and the inner output (and scalars)
    assert listed["peak_bytes"] == plain
    assert sum(t["bytes"] for t in listed["peak_tensors"]) == plain
