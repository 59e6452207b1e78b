"""``rnn_memory`` counts what torch's fused float32 CPU LSTM keeps and allocates, byte for byte
(exact live-tensor accounting), so the estimate of an LSTM graph is a count, not a fit."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from revstudio.diagnostics.memory import LiveTensorTracker  # noqa: E402
from revstudio.diagnostics.rnn_memory import (  # noqa: E402
    good_ld,
    lstm_backward_bytes,
    lstm_kept_bytes,
    workspace_bytes,
)
from revstudio.nodes.torch_modules.layers import BiRNN  # noqa: E402

CASES = [(1, 4, 12, 8, 1), (8, 32, 64, 16, 1), (3, 5, 7, 9, 2), (16, 9, 40, 72, 1), (32, 4, 12, 16, 2)]
# weights large beside length x batch: the backward peaks at the second call, beside the first's
# gradients (counted at the first call only: 17 % under a step's peak)
LATER_CALLS = [(1, 7, 8, 64, 1)]


def test_leading_dimensions_follow_onednn() -> None:
    assert [good_ld(d) for d in (1, 16, 17, 128, 256, 512)] == [16, 16, 32, 128, 272, 528]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch,steps,features,hidden,layers", CASES + LATER_CALLS)
def test_kept_and_backward_bytes_are_exact(batch: int, steps: int, features: int, hidden: int,
                                           layers: int, bias: bool) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rnn = BiRNN(features, hidden, "lstm", layers, bias=bias)
    x = torch.randn(batch, features, steps, requires_grad=True)
    rnn(x)[0].sum().backward()  # warm up: one-time allocations are not the step's
    rnn.zero_grad(set_to_none=True)
    grad = torch.ones(batch, 2 * hidden, steps)
    with LiveTensorTracker() as tracker:
        (y,) = rnn(x)
        kept = tracker.live_bytes() - y.numel() * 4
        tracker.reset_peak()
        before = tracker.live_bytes()
        y.backward(grad)
        peak = tracker.peak_bytes - before
    assert kept == lstm_kept_bytes(batch, steps, features, hidden, layers, bias)
    assert peak == lstm_backward_bytes(batch, steps, features, hidden, layers, bias=bias)


def test_one_workspace_is_one_call_of_the_fused_kernel() -> None:
    lstm = torch.nn.LSTM(40, 72, batch_first=True)
    x = torch.randn(16, 9, 40, requires_grad=True)
    sizes = []

    class Spy(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            if "mkldnn_rnn_layer" in str(func):
                sizes.append(out[-1].numel())
            return out

    with Spy():
        lstm(x)
    assert sizes == [workspace_bytes(16, 9, 40, 72)]


@pytest.mark.parametrize("bias", [True, False])
def test_the_estimate_of_an_lstm_graph_counts_what_it_keeps_with_or_without_biases(bias: bool) -> None:
    from revstudio.clicmd.memory import measure_modes
    from revstudio.core.generate import Builder
    from revstudio.diagnostics.check import full_check

    torch.set_num_threads(1)
    b = Builder("lstm")
    b.node("Input", "x", shape=[5, 7])
    b.chain("x.out", b.node("Activation", "stem", fn="tanh"),
            b.node("BiRNN", "rnn", hidden_size=6, cell="lstm", num_layers=2, bias=bias), b.node("Output", "y"))
    graph = b.done()
    report = full_check(graph, batch=3)
    measured = measure_modes(graph, 3, torch.device("cpu"))
    loss = 4  # the float32 scalar loss is alive after forward too
    assert measured["standard"]["kept_bytes"] == report.estimate.totals()["standard"]["activation_bytes"] + loss
