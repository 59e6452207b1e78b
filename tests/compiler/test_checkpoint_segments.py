"""Checkpoint mode recomputes a region in about sqrt(N) segments: its peak falls well
below standard mode's while its gradients stay standard mode's."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.compiler.checkpointing import region_segments  # noqa: E402
from revstudio.core.generate import revnet_chain  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.diagnostics.memory import measure_step  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def test_segments_hold_about_sqrt_n_computing_steps_each() -> None:
    block = [0, 1, 1, 0]  # Split, coupling F, coupling G, Concat
    segs = region_segments(block * 16)  # 32 computing steps -> 6 segments
    assert len(segs) == 6
    assert segs[0][0] == 0 and segs[-1][1] == 64
    assert all(a[1] == b[0] for a, b in zip(segs, segs[1:]))
    counts = [sum((block * 16)[a:b]) for a, b in segs]
    assert max(counts) - min(counts) <= 1 and sum(counts) == 32
    # each cut falls just before a computing step
    assert all((block * 16)[a] == 1 for a, _ in segs[1:])
    assert region_segments([1, 1]) == [(0, 2)]
    assert region_segments([]) == []


def _grads(model, x):  # type: ignore[no-untyped-def]
    model.zero_grad(set_to_none=True)
    out = model(x)
    (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
    return [p.grad.clone() for p in model.parameters()]


def test_checkpoint_peak_well_below_standard_with_standard_gradients() -> None:
    torch.manual_seed(0)
    graph = revnet_chain(16, channels=8, size=8)
    model = compile_graph(graph, mode="standard")
    model.train()
    x = torch.randn(8, 8, 8, 8)
    peaks = {}
    grads = {}
    for mode in ("standard", "checkpoint"):
        model.mode = mode
        peaks[mode] = measure_step(model, (x,), timing_runs=0)["peak_bytes"]
        grads[mode] = _grads(model, x)
    assert peaks["checkpoint"] <= 0.6 * peaks["standard"]
    for a, b in zip(grads["standard"], grads["checkpoint"]):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_checkpointed_flow_keeps_its_log_determinant() -> None:
    graph = load(EXAMPLES / "glow_flow.revs")
    torch.manual_seed(0)
    model = compile_graph(graph, mode="standard")
    model.train()
    shape = next(n for n in graph if n.type == "Input").params["shape"]
    x = torch.randn(4, *shape)
    if hasattr(model, "initialize"):
        model.initialize(x)
    results = {}
    for mode in ("standard", "checkpoint"):
        model.mode = mode
        model.zero_grad(set_to_none=True)
        z = model(x)
        loss = z.square().sum() - model.logdet.sum()
        loss.backward()
        results[mode] = (float(loss.detach()), [p.grad.clone() for p in model.parameters() if p.grad is not None])
    assert results["standard"][0] == pytest.approx(results["checkpoint"][0], rel=1e-6)
    for a, b in zip(results["standard"][1], results["checkpoint"][1]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
