"""The memory layout of the streams a region copies its inputs into (``model.memory_format``).

On the CPU a float32 region with 2-D convolutions keeps its streams in channels_last
(oneDNN's own layout: convolutions do not reorder their input or gradient), elsewhere
in the layout of its input. Only where values are stored changes: results agree
across layouts, modes agree within one, weights are never touched, and no memory is
added (the streams are copies in any case).
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from compiler_graphs import glow, nested_quarter, wired_revnet  # noqa: E402

import revstudio.compiler as C  # noqa: E402
from revstudio.diagnostics.memory import measure_step  # noqa: E402

CL, NCHW = torch.channels_last, torch.contiguous_format


def _step(model, x):
    x = x.clone().requires_grad_(True)
    out = model(x)
    (out * torch.linspace(-1, 1, out.numel()).view(out.shape)).sum().backward()
    grads = {k: p.grad.clone() for k, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    return out.detach(), x.grad, grads


def test_automatic_layout_is_channels_last_for_convolutions_on_the_cpu() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(2, channels=4, size=6), device="cpu")
    assert model.memory_format is None  # automatic
    x = torch.randn(2, 4, 6, 6)
    out = model(x)
    assert out.is_contiguous(memory_format=CL) and not out.is_contiguous()
    assert x.is_contiguous()  # the caller's tensor is neither converted nor freed
    # weights stay as they are: state_dict is the same in every layout
    assert all(t.is_contiguous() for t in model.state_dict().values())
    model.mode = "standard"  # plain autograd: layers run on what they are given
    assert model(x).is_contiguous()
    model.mode = "reversible"
    model.memory_format = NCHW
    assert model(x).is_contiguous()


def test_other_regions_keep_their_inputs_layout() -> None:
    torch.manual_seed(0)
    wide = C.compile(wired_revnet(1, channels=4, size=4), device="cpu", dtype=torch.float64)
    x = torch.randn(2, 4, 4, 4, dtype=torch.float64)
    assert wide(x).is_contiguous()  # oneDNN has no float64 convolutions: nothing to gain
    assert wide(x.contiguous(memory_format=CL)).is_contiguous(memory_format=CL)  # the input's own layout
    wide.memory_format = CL  # but asking is honoured
    assert wide(x).is_contiguous(memory_format=CL)


def test_layouts_give_the_same_results() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(3, channels=4, size=6, stem=True), device="cpu")
    x = torch.randn(3, *model.plan.inputs[0].shape)
    model.memory_format = NCHW
    out_a, gx_a, gp_a = _step(model, x)
    model.memory_format = CL
    out_b, gx_b, gp_b = _step(model, x)
    assert torch.allclose(out_a, out_b, atol=1e-5) and torch.allclose(gx_a, gx_b, atol=1e-5)
    assert gp_a.keys() == gp_b.keys()
    assert all(torch.allclose(gp_a[k], gp_b[k], atol=1e-4) for k in gp_a)
    assert gx_b.is_contiguous()  # the input's gradient comes back in the caller's layout


def test_reversible_equals_standard_in_channels_last_to_float64_precision() -> None:
    torch.manual_seed(0)
    model = C.compile(nested_quarter(8, 4, inplace_before=True), device="cpu", dtype=torch.float64)
    model.memory_format = CL
    x = torch.randn(2, 8, 4, 4, dtype=torch.float64)
    results = {}
    for mode in ("reversible", "standard"):
        model.mode = mode
        results[mode] = _step(model, x)
    (oa, ga, pa), (ob, gb, pb) = results["reversible"], results["standard"]
    assert torch.allclose(oa, ob, rtol=0, atol=1e-12) and torch.allclose(ga, gb, rtol=0, atol=1e-10)
    assert all(torch.allclose(pa[k], pb[k], rtol=0, atol=1e-10) for k in pa)


def test_the_inversion_error_is_measured_against_the_callers_batch() -> None:
    """The region's streams are channels_last copies; the caller's batch stays the reference."""
    torch.manual_seed(0)
    model = C.compile(wired_revnet(2, channels=4, size=6), device="cpu")
    x = torch.randn(2, 4, 6, 6)
    y = model(x)
    assert y.grad_fn.refs and not y.grad_fn.samples
    y.sum().backward()
    (error,) = model.inversion_errors().values()
    assert 0 <= error < 1e-10


def test_the_layout_costs_no_memory() -> None:
    """The streams are copies in either layout: peak and kept bytes (exact accounting) are
    those of the usual layout."""
    torch.manual_seed(0)
    model = C.compile(wired_revnet(4, channels=8, size=8), device="cpu")
    x = torch.randn(4, 8, 8, 8)
    found = {}
    for fmt in (NCHW, CL):
        model.memory_format = fmt
        mem = measure_step(model, (x,), lambda out: out.sum(), timing_runs=0)
        found[fmt] = (mem["peak_bytes"], mem["kept_bytes"])
    assert found[CL] == found[NCHW]


def test_a_flow_inverts_in_channels_last() -> None:
    torch.manual_seed(0)
    model = C.compile(glow(4), device="cpu")
    x = torch.randn(2, *model.plan.inputs[0].shape)
    model.memory_format = CL
    with torch.no_grad():
        z = model(x)
        back = model.inverse(z)
        again = model.inverse(z.contiguous(memory_format=CL))  # either layout goes in
    assert torch.allclose(back, x, atol=1e-5) and torch.allclose(back, again, atol=1e-6)


def test_an_unknown_layout_is_refused_with_the_choices() -> None:
    model = C.compile(wired_revnet(1), device="cpu")
    with pytest.raises(ValueError, match="channels_last.*contiguous_format.*None"):
        model.memory_format = torch.preserve_format
    with pytest.raises(ValueError, match="channels_last"):
        model.memory_format = "channels_last"  # type: ignore[assignment]


def test_float32_gradcheck_with_dropout_in_a_channels_last_region() -> None:
    """`revstudio gradcheck --dtype float32` compares a channels_last region with plain
    autograd in the usual layout: dropout must drop the same values in both."""
    from revstudio.diagnostics.gradcheck import compare_modes

    graph = wired_revnet(3, channels=4, size=6, extra="Dropout")
    report = compare_modes(graph, batch=3, dtype="float32")
    assert report.ok, report.max_error
    assert report.max_error < 1e-4


def test_side_inputs_are_not_copied_for_the_layout() -> None:
    """A value a region reads but does not rebuild is kept for backward as it is: a
    channels_last copy of it would be kept too."""
    from revstudio.compiler import runtime_streams as streams

    x = torch.randn(2, 4, 6, 6)
    assert streams.to_stream(x, torch.float32, copy=False, layout=CL) is x
    assert streams.to_stream(x, torch.float32, copy=True, layout=CL).is_contiguous(memory_format=CL)
    pair = streams.to_stream(x, streams.FLOAT32X2, copy=False, layout=CL)
    assert pair.hi is x
