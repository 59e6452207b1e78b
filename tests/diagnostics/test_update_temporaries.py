"""The estimate's model of a stream update's temporaries is what the runtime allocates.

A region's backward rebuilds a coupling's input in place (``runtime_streams._update``):
a compensated float32 pair in batch pieces with three temporaries each, a float64
stream with one widened copy of the narrow update per piece. ``stream_updates.update_pieces`` /
``update_temporaries`` mirror that torch-free; here both are held to the runtime.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler.runtime_streams import Pair, _pieces, _update  # noqa: E402
from revstudio.diagnostics.memory import LiveTensorTracker  # noqa: E402
from revstudio.diagnostics.stream_updates import update_pieces, update_temporaries  # noqa: E402

# (batch, per-sample shape): tiny, one piece, the minimum of eight, more than eight, odd batches
SHAPES = [(1, (4, 16, 16)), (2, (8, 4, 4)), (16, (4, 16, 16)), (64, (4, 16, 16)), (7, (16, 32, 32)),
          (3, (64, 32, 32)), (33, (6, 8, 8)), (128, (32, 16, 16))]


def _elements(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@pytest.mark.parametrize("batch,shape", SHAPES)
@pytest.mark.parametrize("temporaries", [1, 3])
def test_pieces_are_the_runtimes(batch: int, shape: tuple[int, ...], temporaries: int) -> None:
    for dtype in (torch.float32, torch.float64):
        y = torch.empty(batch, *shape, dtype=dtype)
        assert update_pieces(batch, _elements(shape) * y.element_size(), temporaries) == _pieces(y, temporaries)


# a large stream too: on an accelerator pieces only bound updates of over 64 MiB of temporaries
DEVICE_SHAPES = [*SHAPES, (512, (64, 32, 32)), (64, (256, 64, 64))]


@pytest.mark.parametrize("batch,shape", DEVICE_SHAPES)
@pytest.mark.parametrize("temporaries", [1, 2, 3])
def test_pieces_on_an_accelerator_are_the_runtimes(batch: int, shape: tuple[int, ...], temporaries: int) -> None:
    """Off the CPU the runtime updates a stream in pieces of up to 64 MiB of temporaries (each
    piece costs every pass a launch): on an H200 the reversible peak measured one update's
    whole temporaries above the CPU rule's estimate (benchmarks/README.md, "The GPU check").
    The runtime's rule is read off a tensor on the meta device, which allocates nothing."""
    from revstudio.compiler.runtime_streams import over_rows
    from revstudio.diagnostics import stream_updates

    y = torch.empty(batch, *shape, device="meta")
    sample = _elements(shape) * y.element_size()
    assert update_pieces(batch, sample, temporaries, "cuda") == _pieces(y, temporaries)
    assert stream_updates.over_rows(batch, sample, "cuda") == over_rows(y)
    assert stream_updates.update_break(_elements(shape), 4, 8, "cuda") is None
    # a float64 stream's update in one piece below 64 MiB: whole widened values, never fewer than
    # the CPU's; a float32 pair's is one fused kernel there, with no temporaries (runtime_fused)
    assert update_temporaries(batch, _elements(shape), 2, 8, device="cuda") >= update_temporaries(
        batch, _elements(shape), 2, 8)
    assert update_temporaries(batch, _elements(shape), 4, 8, device="cuda") == 0
    assert update_temporaries(batch, _elements(shape), 4, 8, fresh=True, device="cuda") == 0


def _measured(y: object, f: torch.Tensor) -> int:
    with LiveTensorTracker() as tracker:
        before = tracker.live_bytes()
        _update(y, f, -1, True)  # type: ignore[arg-type]
        return tracker.peak_bytes - before


@pytest.mark.parametrize("batch,shape", SHAPES)
def test_a_pairs_in_place_update_takes_the_temporaries_counted(batch: int, shape: tuple[int, ...]) -> None:
    torch.manual_seed(0)
    y = Pair(torch.randn(batch, *shape), torch.zeros(batch, *shape))
    f = torch.randn(batch, *shape)
    assert _measured(y, f) == update_temporaries(batch, _elements(shape), 4, 8)


@pytest.mark.parametrize("batch,shape", SHAPES[:4])
def test_a_float64_streams_update_widens_one_piece_at_a_time(batch: int, shape: tuple[int, ...]) -> None:
    y = torch.randn(batch, *shape, dtype=torch.float64)
    f = torch.randn(batch, *shape).to(torch.float16)
    assert _measured(y, f) == update_temporaries(batch, _elements(shape), 2, 8)


def test_streams_in_the_models_dtype_need_no_temporaries() -> None:
    assert update_temporaries(16, 1024, 4, 4) == 0
    assert update_temporaries(16, 1024, 8, 8) == 0
    assert update_temporaries(16, 0, 4, 8) == 0


def test_the_measured_peak_drops_where_the_estimate_says() -> None:
    """At batch 22 the pairs' updates of this RevNet switch to eight pieces: the step peaks
    lower than at batch 21, measured as estimated (``MemoryEstimate.batch_breaks``)."""
    from revstudio.compiler import compile as compile_graph
    from revstudio.core.generate import revnet_chain
    from revstudio.diagnostics.check import full_check
    from revstudio.diagnostics.estimate import estimate_peak
    from revstudio.diagnostics.gradcheck import random_inputs
    from revstudio.diagnostics.memory import compare_modes

    torch.set_num_threads(1)
    graph = revnet_chain(4, channels=8, size=8)
    report = full_check(graph)
    model = compile_graph(graph, mode="standard")
    model.train()
    measured, estimated = {}, {}
    for batch in (21, 22):
        inputs = random_inputs(graph, batch, torch.float32, 0, torch.device("cpu"), requires_grad=False)
        measured[batch] = compare_modes(model, inputs, ("reversible",))["reversible"]["peak_bytes"]
        estimated[batch] = estimate_peak(graph, report, batch=batch, mode="reversible")
        assert abs(estimated[batch] / measured[batch] - 1) < 0.01
    assert measured[22] < measured[21] and estimated[22] < estimated[21]


def test_the_estimate_for_a_gpu_prices_the_fused_pair_update() -> None:
    """``full_check(device="cuda")``, ``estimate_peak`` and ``budget_peak`` price the reversible
    step with the GPU's pair update, one fused kernel without temporaries (on the torch passes
    an H200 held two whole stream values of them at digits_revnet's reversible peak, batch 16:
    409,928 B of tensors where the CPU rule said 349,992); standard and checkpoint mode update
    no stream, so they are the same on every device."""
    from pathlib import Path

    from revstudio.core.project import load
    from revstudio.diagnostics.budget import budget_peak
    from revstudio.diagnostics.check import full_check
    from revstudio.diagnostics.estimate import estimate_peak

    examples = Path(__file__).resolve().parents[2] / "resources" / "examples"
    digits = load(examples / "digits_revnet.revs")
    cpu, gpu = full_check(digits, batch=16), full_check(digits, batch=16, device="cuda")
    for mode in ("standard", "checkpoint"):
        assert gpu.estimate.peak_bytes(mode) == cpu.estimate.peak_bytes(mode)
    # there F's backward, not the update, is the reversible peak: the same on both devices (the
    # CPU's measured 347,664 B; 349,992 until F's layers were walked one by one)
    assert gpu.estimate.peak_bytes("reversible") == cpu.estimate.peak_bytes("reversible") == 347_656
    # at batch 8 it peaks at the update on the CPU (measured there: 197,552 B), with temporaries
    # the GPU's kernel does without: there F's backward is the peak, before its first layer's
    # weights have their gradients (14,048 B under the CPU's)
    cpu, gpu = full_check(digits, batch=8), full_check(digits, batch=8, device="cuda")
    assert (cpu.estimate.peak_bytes("reversible"), gpu.estimate.peak_bytes("reversible")) == (197_544, 183_496)
    assert estimate_peak(digits, cpu, batch=8, mode="reversible", device="cuda") == 183_496
    assert budget_peak(digits, cpu, 0, batch=8, device="cuda") < budget_peak(digits, cpu, 0, batch=8)


@pytest.mark.parametrize("here", ["cpu", "cuda"])
@pytest.mark.parametrize("device,kind", [("cuda", "cuda"), ("cuda:1", "cuda"), (" CUDA ", "cuda"), ("cpu", "cpu"),
                                         ("auto", "here"), (None, "here"), (3, "cpu")])
def test_the_estimate_is_for_the_device_the_project_trains_on(device: object, kind: str, here: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a device, ``full_check`` (the editor's and ``revstudio check``'s) prices the step
    for the project's ``training.device``; ``auto`` (and unset) for the device it would pick on
    this machine, read without torch (``device_probe``)."""
    from pathlib import Path

    from revstudio.core.project import load
    from revstudio.diagnostics import device_probe
    from revstudio.diagnostics.check import full_check, training_device

    monkeypatch.setattr(device_probe, "auto_device", lambda: here)
    kind = here if kind == "here" else kind
    graph = load(Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_coupling.revs")
    graph.training = {**(graph.training or {}), "device": device}
    assert training_device(graph) == kind
    assert full_check(graph, batch=16).estimate.peak_bytes("reversible") == full_check(
        graph, batch=16, device=kind).estimate.peak_bytes("reversible")
