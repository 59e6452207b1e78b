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
