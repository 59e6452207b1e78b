"""Compensated float32 streams (``stream_dtype = "float32x2"``): each residual stream a float32
value ``hi`` plus a float32 correction ``lo``. They must rebuild like float64 streams: the same
gradients (to float32 rounding) on every example project and test graph, the same region
outputs, a reported inversion error, and kept-after-forward memory that is flat with depth."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from compiler_graphs import nested_quarter, wired_revnet
from count_ops import CountOps
from test_gradients import GRAPHS, _inputs, _max_rel, _step, _stream_read_after_it_is_consumed
from torch.utils._python_dispatch import TorchDispatchMode

import revstudio.compiler as C
from revstudio.compiler import runtime as rt
from revstudio.compiler import runtime_streams as streams
from revstudio.core.project import load
from revstudio.diagnostics.memory import LiveTensorTracker

torch.set_num_threads(1)

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"
PAIR = rt.FLOAT32X2


def _float32_inputs(model: C.CompiledModel, batch: int = 3) -> list[torch.Tensor]:
    return [x.detach().float().requires_grad_(True) for x in _inputs(model, batch)]


def _compare(model: C.CompiledModel, xs: list[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    results = {}
    for stream in (torch.float64, PAIR):
        model.stream_dtype = stream
        results[stream] = _step(model, "reversible", xs)
    return results[torch.float64], results[PAIR]


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.revs")))
def test_pair_streams_give_the_float64_streams_gradients_on_every_example(name: str) -> None:
    torch.manual_seed(0)
    model = C.compile(load(EXAMPLES / name), device="cpu")
    model.train()
    xs = _float32_inputs(model)
    wide, pair = _compare(model, xs)
    assert _max_rel(pair, wide) < 1e-5
    assert any(float(g.abs().max()) > 0 for g in wide)
    if model.regions:
        assert model.inversion_errors()  # measured in the pair's backward too


TEST_GRAPHS = {**{n: g for n, g in GRAPHS.items() if n != "plain_chain"},
               "side_input": _stream_read_after_it_is_consumed}


@pytest.mark.parametrize("name", sorted(TEST_GRAPHS))
def test_pair_streams_give_the_float64_streams_gradients_on_the_test_graphs(name: str) -> None:
    """Dropout replay, BatchNorm, nested groups, invertible layers (Glow), a side input
    (kept, read through a pair with no correction) consumed by a Permute."""
    torch.manual_seed(0)
    model = C.compile(TEST_GRAPHS[name](), device="cpu")
    model.train()
    xs = _float32_inputs(model)
    wide, pair = _compare(model, xs)
    assert _max_rel(pair, wide) < 1e-5


def test_region_outputs_are_the_float64_streams_rounding() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(16, channels=4, size=6), device="cpu")
    x = torch.randn(2, 4, 6, 6, requires_grad=True)
    outs = {}
    for stream in (torch.float64, PAIR, torch.float32):
        model.stream_dtype = stream
        outs[stream] = model(x).detach()
        with torch.no_grad():
            assert torch.equal(model(x), outs[stream])  # inference (in place, no autograd) agrees
    assert torch.equal(outs[PAIR], outs[torch.float64])
    assert not torch.equal(outs[torch.float32], outs[torch.float64])  # the comparison can fail


def test_inversion_error_is_reported_for_pair_streams() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(24, channels=4, size=6), device="cpu")
    x = torch.randn(2, 4, 6, 6)
    errors = {}
    for stream in (torch.float32, PAIR):
        model.stream_dtype = stream
        model(x).sum().backward()
        errors[stream] = model.inversion_errors()
        on_demand = model.measure_inversion(x)
        assert set(on_demand) == set(errors[stream])
    (region,) = errors[PAIR]
    assert 0 <= errors[PAIR][region] < 1e-10 < errors[torch.float32][region]
    assert model.measure_inversion(x)[region] < 1e-10


def _kept_after_forward(blocks: int, nested: bool = False) -> int:
    torch.manual_seed(0)
    graph = (nested_quarter(8, 8, blocks=blocks, inplace_before=True) if nested
             else wired_revnet(blocks, channels=4, size=8, stem=True))
    model = C.compile(graph, device="cpu")
    model.stream_dtype = PAIR
    x = torch.randn(2, *model.plan.inputs[0].shape, requires_grad=True)
    model(x)
    with LiveTensorTracker(exact_resizes=True) as tracker:
        y = model(x)
        kept = tracker.live_bytes()
    y.sum().backward()
    return kept


def test_kept_after_forward_is_flat_with_depth_and_the_size_of_float64_streams() -> None:
    assert _kept_after_forward(4) == _kept_after_forward(32) > 0
    assert _kept_after_forward(2, nested=True) == _kept_after_forward(8, nested=True)
    # the output (float32) plus its correction (float32): what float64 streams keep
    # (the output plus its float32 rounding residual)
    torch.manual_seed(0)
    model = C.compile(wired_revnet(4, channels=4, size=8, stem=True), device="cpu")
    model.stream_dtype = torch.float64
    x = torch.randn(2, 4, 8, 8, requires_grad=True)
    model(x)
    with LiveTensorTracker(exact_resizes=True) as tracker:
        y = model(x)
        wide = tracker.live_bytes()
    y.sum().backward()
    assert _kept_after_forward(4) == wide


def test_autocast_with_pair_streams() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(3, channels=4, size=8), device="cpu")
    x = torch.randn(2, 4, 8, 8, requires_grad=True)
    results = {}
    for stream in (torch.float64, PAIR):
        model.stream_dtype = stream
        model.zero_grad(set_to_none=True)
        x.grad = None
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = model(x)
        assert y.dtype == torch.float32
        y.square().sum().backward()
        results[stream] = [y.detach(), x.grad.clone()] + [p.grad.clone() for p in model.parameters()]
    assert _max_rel(results[PAIR], results[torch.float64]) < 1e-5
    assert all(e < 1e-10 for e in model.inversion_errors().values())


def test_the_setting_is_checked_and_applies_to_float32_models_only() -> None:
    model = C.compile(wired_revnet(1), device="cpu")
    assert model.stream_dtype is None and model._root.stream_for(torch.float32) == PAIR  # the automatic choice
    model.stream_dtype = "float32x2"
    assert model.stream_dtype == PAIR and model._root.stream_for(torch.float32) == PAIR
    assert model._root.stream_for(torch.float64) is None  # a float64 model keeps float64 streams
    assert model._root.stream_for(torch.bfloat16) is torch.float64
    with pytest.raises(ValueError, match="float32x2"):
        model.stream_dtype = "float32x3"


def test_a_float64_model_asked_for_pairs_keeps_its_exact_gradients() -> None:
    torch.manual_seed(0)
    model = C.compile(GRAPHS["wired"](), dtype=torch.float64, device="cpu")
    model.stream_dtype = PAIR
    xs = _inputs(model)
    assert _max_rel(_step(model, "reversible", xs), _step(model, "standard", xs)) < 1e-10


@pytest.mark.parametrize("sign", [1, -1])
def test_a_pair_update_is_exact_and_the_same_in_pieces(sign: int) -> None:
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(16, 8, 32, 32, generator=gen) * 1e3  # 512 KiB: updated in 8 pieces
    f = torch.randn(16, 8, 32, 32, generator=gen) * 1e-3
    fresh = rt._update(rt.to_stream(x, PAIR), f, sign, False)
    stream = rt.to_stream(x, PAIR, copy=True)
    hi = stream.hi
    assert stream.lo.stride() == (0, 0, 0, 0)  # no correction yet: zeros that take no memory
    in_place = rt._update(stream, f, sign, True)
    lo = in_place.lo
    assert in_place.hi is hi and lo.is_contiguous()  # updated where it lies; lo made for it
    assert torch.equal(fresh.hi, hi) and torch.equal(fresh.lo, lo)
    exact = x.double() + sign * f.double()
    assert torch.equal(hi.double() + lo.double(), exact)  # hi + lo is the float64 sum
    assert torch.equal(hi, exact.float())  # and hi its float32 rounding
    back = rt._update(in_place, f, -sign, True)
    assert torch.equal(back.hi, x) and not back.lo.any()  # the inverse gives x back exactly


@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("shape", [(2, 4, 4, 4), (32, 8, 8, 8), (3, 5)])
def test_a_streams_first_update_is_twosum_alone(sign: int, shape: tuple[int, ...]) -> None:
    """A stream copied into a region has no correction yet (zeros that take no memory); its
    first one-piece update is TwoSum alone, in six passes, and gives the ten passes' pair."""
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(*shape, generator=gen) * 1e3
    f = torch.randn(*shape, generator=gen)
    first = rt.to_stream(x, PAIR, copy=True)
    old_hi = first.hi
    assert streams._pieces(first.hi, 3, True) == 1 and streams._expanded(first.lo)
    with CountOps() as ops:
        got = rt._update(first, f, sign, True, True)
    assert ops.count <= 6 and got.hi is not old_hi  # TwoSum's sum and error are the new pair
    ref = rt.to_stream(x, PAIR, copy=True)
    ref = rt.Pair(ref.hi, torch.zeros_like(ref.hi))  # a correction of real zeros: the ten passes
    want = rt._update(ref, f, sign, True, True)
    assert torch.equal(got.hi, want.hi) and torch.equal(got.lo, want.lo)
    exact = x.double() + sign * f.double()
    assert torch.equal(got.hi.double() + got.lo.double(), exact)
    assert torch.equal(got.hi, exact.float())  # normalised: hi is the sum's float32 rounding


def test_updates_work_in_few_pieces_off_the_cpu() -> None:
    """On the CPU an update works in L2-sized pieces (small temporaries at the peak); on an
    accelerator each piece costs every pass a kernel launch, so only huge streams are split."""
    cpu = torch.empty(16, 32, 16, 16)
    assert streams._pieces(cpu, 3) == 8
    elsewhere = torch.empty(16, 32, 16, 16, device="meta")  # stands in for a GPU here
    assert streams._pieces(elsewhere, 3) == 1
    assert streams._pieces(torch.empty(64, 256, 64, 64, device="meta"), 3) == 12  # 768 MiB of temporaries


def test_the_callers_batch_is_the_inversion_errors_own_reference() -> None:
    """No samples of the caller's batch are kept for the inversion error (they would sit at
    the peak): backward compares with the batch itself, through a weak reference. Inputs made
    inside the model keep their samples (nothing else may hold them until backward)."""
    torch.manual_seed(0)
    model = C.compile(wired_revnet(8, channels=4, size=6), device="cpu")
    x = torch.randn(2, 4, 6, 6)
    y = model(x)
    node = y.grad_fn
    assert node.samples == {} and len(node.refs) == 1
    y.sum().backward()
    (error,) = model.inversion_errors().values()
    assert 0 <= error < 1e-10
    y = model(torch.randn(2, 4, 6, 6))  # the caller keeps no reference: nothing to compare with
    y.sum().backward()
    assert model.inversion_errors() == {}
    y = model(x)
    x.add_(1)  # changed since the forward: not a reference any more
    y.sum().backward()
    assert model.inversion_errors() == {}


def test_a_pair_update_keeps_its_temporaries_small() -> None:
    """The in-place update needs three temporaries per batch piece, alive next to the stream at
    the peak: even for a stream under one chunk they stay an eighth of it (the revnet_wired
    example at batch 8 peaked 64 KiB higher with the whole stream as one piece)."""

    made: list[int] = []

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            if isinstance(out, torch.Tensor) and not any(out is a for a in args) and out.numel() > 1:
                made.append(out.numel() * out.element_size())
            return out

    stream = rt.to_stream(torch.randn(8, 4, 16, 16), PAIR, copy=True)  # 32 KiB per tensor
    f = torch.randn(8, 4, 16, 16)
    stream = rt._update(stream, f, 1, True)  # past its first update: a correction of its own
    with Watch():
        out = rt._update(stream, f, 1, True)
    assert out is stream and made
    assert max(made) <= stream.hi.numel() * stream.hi.element_size() // 8
    inner = C.compile(nested_quarter(8, 4, inplace_before=True), device="cpu")
    y = inner(torch.randn(2, 8, 4, 4))
    assert y.grad_fn.samples and not y.grad_fn.refs  # the ReLU's output, not the caller's
    y.sum().backward()
    assert inner.inversion_errors()


@pytest.mark.parametrize("layout", [None, torch.contiguous_format, torch.channels_last])
def test_layers_read_dense_halves_of_a_pair_stream(layout: torch.memory_format | None) -> None:
    """Split along channels, a pair stream's parts get buffers of their own, in the model's
    layout (automatic: channels_last on the CPU): a channel-slice view of one buffer made every
    convolution reorder its input, forward and backward."""
    torch.manual_seed(0)
    model = C.compile(wired_revnet(4, channels=4, size=6), device="cpu")
    assert model.stream_dtype in (None, PAIR)
    model.memory_format = layout
    want = torch.channels_last if layout is None else layout
    read: list[bool] = []
    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            m.register_forward_pre_hook(lambda _m, args: read.append(args[0].is_contiguous(memory_format=want)))
    x = torch.randn(2, 4, 6, 6)
    model(x).sum().backward()
    assert len(read) == 4 * 2 * 2 and all(read)  # F and G of 4 blocks, forward and recompute
    (error,) = model.inversion_errors().values()
    assert 0 <= error < 1e-10


def test_the_inversion_error_against_the_callers_batch_is_measured_in_float32() -> None:
    """``(x - hi) - lo`` in float32 is the float64 difference to within a rounding of itself,
    with at most two float32 samples alive (three float64 ones were a tiny model's peak)."""
    from revstudio.compiler.runtime_function import _error_against
    from revstudio.compiler.runtime_streams import Pair
    from revstudio.diagnostics.memory import LiveTensorTracker

    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 8, 16, 16, generator=g)
    for ulps, lo_scale in ((0, 1e-9), (3, 1e-8), (1000, 0.0), (0, 0.0)):
        hi = x.clone()
        if ulps:
            hi = hi + ulps * torch.finfo(torch.float32).eps * x.abs() * torch.sign(torch.randn(x.shape, generator=g))
        lo = (torch.randn(x.shape, generator=g) * lo_scale * x.abs()).float()
        pair = Pair(hi, lo)
        index = streams._sample_index(x, streams.SAMPLES)
        ref = torch.take(x, index).double()
        exact = ((ref - (torch.take(hi, index).double() + torch.take(lo, index).double())).norm() / ref.norm()).item()
        with LiveTensorTracker() as tracker:
            before = tracker.live_bytes()
            err = _error_against(x, pair).item()
            extra = tracker.peak_bytes - before
        assert extra <= 2 * streams.SAMPLES * 4 + 64
        if ulps or lo_scale:
            assert abs(err / exact - 1) < 1e-5, (ulps, lo_scale, err, exact)
        else:
            assert err == exact == 0.0


@pytest.mark.parametrize("shape", [(1, 8, 4, 4), (2, 4, 4, 4), (3, 5, 7)])
def test_a_small_streams_inversion_error_is_taken_whole_with_one_temporary(shape: tuple[int, ...]) -> None:
    """A stream of at most SAMPLES values is all sampled: its error is taken of the tensors
    themselves (one stream-sized temporary, no gathered copies), in any layout."""
    from revstudio.compiler.runtime_function import _error_against
    from revstudio.compiler.runtime_streams import Pair
    from revstudio.diagnostics.memory import LiveTensorTracker

    g = torch.Generator().manual_seed(1)
    x = torch.randn(*shape, generator=g)
    assert x.numel() <= streams.SAMPLES
    hi = x + 3 * torch.finfo(torch.float32).eps * x.abs() * torch.sign(torch.randn(x.shape, generator=g))
    if hi.dim() == 4:
        hi = hi.contiguous(memory_format=torch.channels_last)
    lo = (torch.randn(x.shape, generator=g) * 1e-8 * x.abs()).float()
    exact = ((x.double() - (hi.double() + lo.double())).norm() / x.double().norm()).item()
    with LiveTensorTracker() as tracker:
        before = tracker.live_bytes()
        err = _error_against(x, Pair(hi, lo)).item()
        extra = tracker.peak_bytes - before
    assert extra <= x.numel() * 4 + 16
    assert abs(err / exact - 1) < 1e-5
    assert _error_against(x, Pair(x.clone(), streams.no_correction(x))).item() == 0.0


@pytest.mark.parametrize("n", [2**24, 2**24 + 3, 2**31 + 5, 300, 256, 7, 1])
def test_sampled_indices_are_exact_and_in_range_at_any_size(n: int) -> None:
    """The sample's indices are integers spread evenly from the first value to the last. A
    float32 linspace rounded the last one up to ``n`` on CUDA for a 2**24-value stream (a
    128x128x32x32 half, found by benchmarks/device_check.py), and ``take`` asserted."""
    x = torch.zeros(()).expand(n)  # n values, one element of memory
    index = streams._sample_index(x, streams.SAMPLES)
    m = min(streams.SAMPLES, n)
    assert index.dtype == torch.int64 and index.numel() == m
    assert index[0] == 0 and index[-1] == n - 1 and bool((index[1:] >= index[:-1]).all())
    assert index.tolist() == [i * (n - 1) // max(m - 1, 1) for i in range(m)]
    if n < 2**20:
        assert torch.take(torch.arange(n), index).tolist() == index.tolist()


def test_a_flow_layers_result_has_a_correction_that_takes_no_memory() -> None:
    """An ActNorm or InvConv1x1 computes in float32, so its result (forward) and what its inverse
    rebuilds (backward) are pairs with no correction: zeros that take no memory, not a buffer of
    zeros as large as the stream (glow_flow's reversible peak held one; 642,216 B at batch 16
    before, measured by ``benchmarks/bench_estimate.py``)."""
    hi = torch.randn(4, 12, 8, 8)
    made = streams.like(streams.Pair(hi, torch.zeros_like(hi)), hi * 2)
    assert isinstance(made, streams.Pair) and made.lo.untyped_storage().nbytes() == 4
    assert float(made.lo.abs().max()) == 0.0 and made.lo.shape == hi.shape
    torch.manual_seed(0)
    model = C.compile(load(EXAMPLES / "glow_flow.revs"), device="cpu")
    model.train()
    xs = _float32_inputs(model, batch=16)
    wide, pair = _compare(model, xs)  # the same gradients as float64 streams
    assert _max_rel(pair, wide) < 1e-5
    from revstudio.diagnostics.memory import compare_modes

    model.stream_dtype = None
    peak = compare_modes(model, [x.detach() for x in xs], ("reversible",))["reversible"]["peak_bytes"]
    assert peak < 600_000  # 593,068 B measured; one stream value (49,152 B) less than with the zeros


def test_dense_halves_of_a_pair_with_no_correction_take_no_memory_for_it() -> None:
    """Halves split off a pair with no correction yet (a flow layer's result, a stream copied
    into a region), where they are dense views (one sample, channels first), keep that: no
    buffer of zeros as large as the stream. Joined again they are the whole, without a copy of
    ``hi``; a correction one half made since is joined anew."""
    hi = torch.randn(1, 12, 8, 8)
    pair = streams.Pair(hi, streams.no_correction(hi))
    a, b = streams.apart(pair, [6, 6], 1)
    assert all(streams._expanded(p.lo) for p in (a, b))
    assert a.hi._base is hi and b.hi._base is hi
    joined = streams.whole([a, b], [6, 6], 1)
    assert joined is not None and joined.hi is hi and streams._expanded(joined.lo)
    b = streams.Pair(b.hi, torch.full_like(b.hi, 1e-9))  # (as a first in-place update leaves it)
    joined = streams.whole([a, b], [6, 6], 1)
    assert joined is not None and joined.hi is hi
    assert float(joined.lo[:, :6].abs().max()) == 0.0 and bool((joined.lo[:, 6:] == b.lo).all())


def test_a_region_output_a_flow_layer_makes_keeps_no_correction() -> None:
    """A region that ends with an ActNorm: its output is a pair with no correction (zeros that
    take no memory), and the region keeps it so. What a flow layer's inverse rebuilds in
    backward is the runtime's to update in place; what it makes in forward is left unowned, or
    a region output it makes would keep a stream of zeros as its residual. The estimate's kept
    figure counted one (its peak walk did not)."""
    from revstudio.core.project import loads
    from revstudio.diagnostics.check import full_check
    from revstudio.diagnostics.memory import compare_modes

    text = (EXAMPLES / "glow_flow.revs").read_text()
    graph = loads(text.replace('["coupling1.out", "z.in"]', '["coupling1.out", "last.in"], ["last.out", "z.in"]')
                  .replace('{"id": "z", "type": "Output"',
                           '{"id": "last", "type": "ActNorm", "params": {}, "pos": [1800, 0]},\n'
                           '    {"id": "z", "type": "Output"'))
    report = full_check(graph, batch=4)
    assert report.valid and [r.outputs for r in report.regions] == [["last.out"]]
    torch.manual_seed(0)
    model = C.compile(graph, device="cpu")
    model.train()
    xs = [x.detach() for x in _float32_inputs(model, batch=4)]
    model.initialize(*xs)
    measured = compare_modes(model, xs, ("reversible",))["reversible"]
    # (the flow layers' log-determinants, a few floats per sample, are not counted: 76 B here;
    # the estimate counted a correction as large as the output, 12,288 B)
    assert abs(report.estimate.activation_bytes("reversible") / measured["kept_bytes"] - 1) < 0.01
    assert abs(report.estimate.peak_bytes("reversible") / measured["peak_bytes"] - 1) < 0.002
