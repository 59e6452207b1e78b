"""The peak estimate (``estimate_peak``) against the measured peak of a training step on
every example project at batch 1, 16 and 64, and ``max_batch_that_fits``."""
from __future__ import annotations

from pathlib import Path

import pytest

from revstudio.core.generate import revnet_chain
from revstudio.core.project import load
from revstudio.diagnostics.check import full_check
from revstudio.diagnostics.estimate import (
    MODES,
    estimate,
    estimate_peak,
    input_bytes,
    max_batch_that_fits,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"
PROJECTS = sorted(p.stem for p in EXAMPLES.glob("*.revs"))
BATCHES = (1, 16, 64)
TARGET = 0.15


@pytest.fixture(scope="module")
def measured() -> dict[tuple[str, int], dict[str, dict]]:
    torch = pytest.importorskip("torch")
    from revstudio.compiler import compile as compile_graph
    from revstudio.diagnostics.estimate import input_dtype
    from revstudio.diagnostics.gradcheck import random_inputs, torch_dtype
    from revstudio.diagnostics.memory import compare_modes

    torch.set_num_threads(1)
    out = {}
    for name in PROJECTS:
        graph = load(EXAMPLES / f"{name}.revs")
        dtype = torch_dtype(input_dtype(graph))
        torch.manual_seed(0)
        model = compile_graph(graph, mode="standard", dtype=dtype)
        model.train()
        for batch in BATCHES:
            inputs = random_inputs(graph, batch, dtype, 0, torch.device("cpu"), requires_grad=False)
            if hasattr(model, "initialize"):
                model.initialize(*inputs)
            out[(name, batch)] = compare_modes(model, inputs, MODES)
    return out


@pytest.mark.parametrize("name", PROJECTS)
def test_estimated_peak_is_within_target_of_the_measured_peak(name: str, measured) -> None:  # type: ignore[no-untyped-def]
    graph = load(EXAMPLES / f"{name}.revs")
    report = full_check(graph)
    misses = []
    for batch in BATCHES:
        for mode in MODES:
            real = measured[(name, batch)][mode]["peak_bytes"]
            est = estimate_peak(graph, report, batch=batch, mode=mode)
            error = est / real - 1
            if abs(error) > TARGET:
                misses.append(f"{mode} batch {batch}: estimated {est}, measured {real} ({error:+.0%}, "
                              f"target {TARGET:.0%})")
    assert not misses, "\n".join(misses)


def test_peak_counts_kept_activations_and_gradients() -> None:
    graph = revnet_chain(4, channels=8, size=8)
    report = full_check(graph)
    est = estimate(graph, report, report.regions, batch=8)
    for mode in MODES:
        walk = est.peaks[mode]
        assert walk.peak >= walk.kept >= est.activation_bytes(mode)
        assert walk.peak >= walk.kept + est.parameter_bytes()  # parameter gradients appear in backward
    assert est.peak_bytes("reversible") < est.peak_bytes("standard")
    assert est.peak_bytes("checkpoint") < est.peak_bytes("standard")
    small = estimate_peak(graph, report, batch=2, mode="standard")
    big = estimate_peak(graph, report, batch=32, mode="standard")
    assert big > 8 * small
    adam = estimate_peak(graph, report, batch=2, mode="standard", optimizer="adam")
    sgd = estimate_peak(graph, report, batch=2, mode="standard", optimizer="sgd")
    assert adam - small == 2 * (sgd - small) == 2 * est.parameter_bytes()


def test_peak_estimate_rejects_unknown_modes_and_optimizers() -> None:
    graph = revnet_chain(2, channels=4, size=4)
    report = full_check(graph)
    with pytest.raises(ValueError, match="mode 'fast'"):
        estimate_peak(graph, report, batch=1, mode="fast")
    with pytest.raises(ValueError, match="optimizer 'lion'"):
        estimate_peak(graph, report, batch=1, mode="standard", optimizer="lion")


@pytest.mark.parametrize("mode", MODES)
def test_max_batch_that_fits_is_the_largest_batch_under_the_budget(mode: str) -> None:
    graph = revnet_chain(4, channels=8, size=8)
    report = full_check(graph)
    est = estimate(graph, report, report.regions, batch=24)

    def cost(b: int) -> int:
        e = estimate(graph, report, report.regions, batch=b)
        return e.parameter_bytes() + input_bytes(graph, report, b) + e.peak_bytes(mode) + 2 * e.parameter_bytes()

    budget = cost(24)
    assert est.peak_bytes(mode) > 0
    assert max_batch_that_fits(graph, report, budget, mode=mode, optimizer="adam") == 24
    assert max_batch_that_fits(graph, report, budget - 1, mode=mode, optimizer="adam") == 23
    assert max_batch_that_fits(graph, report, 100, mode=mode) is None
    assert max_batch_that_fits(graph, report, 1 << 50, mode=mode) == 1 << 16


def test_reversible_fits_a_larger_batch_than_standard_on_a_deep_revnet() -> None:
    graph = revnet_chain(16, channels=16, size=16)
    report = full_check(graph)
    budget = 64 << 20
    fits = {m: max_batch_that_fits(graph, report, budget, mode=m) for m in MODES}
    assert fits["reversible"] > 2 * fits["standard"]
    assert fits["checkpoint"] > fits["standard"]


def test_largest_fitting_is_exact_for_any_growing_cost() -> None:
    import random

    from revstudio.diagnostics.estimate_fit import largest_fitting

    rng = random.Random(0)
    for _ in range(300):
        base, slope, wobble = rng.randint(0, 1000), rng.randint(0, 50), rng.randint(0, 400)
        bumps = sorted(rng.randint(1, 3000) for _ in range(rng.randint(0, 5)))
        calls: list[int] = []

        def cost(b: int, base: int = base, slope: int = slope, wobble: int = wobble,
                 bumps: list[int] = bumps, calls: list[int] = calls) -> int:
            calls.append(b)  # grows with b: linear, with page-like steps
            return base + slope * b + wobble * sum(1 for x in bumps if b >= x)

        budget, limit = rng.randint(0, 60_000), rng.choice([1, 2, 7, 1 << 12])
        fits = [b for b in range(1, limit + 1) if cost(b) <= budget]
        calls.clear()
        assert largest_fitting(cost, budget, limit) == (max(fits) if fits else None)
        assert len(calls) <= 40


def test_largest_fitting_searches_each_stretch_between_drops() -> None:
    """Where a region's updates switch to smaller pieces the peak drops (as the runtime's
    does): a larger batch can fit where a smaller one does not."""
    import random

    from revstudio.diagnostics.estimate_fit import largest_fitting

    rng = random.Random(1)
    for _ in range(300):
        slope, limit = rng.randint(1, 50), rng.choice([5, 64, 1 << 12])
        breaks = sorted({rng.randint(2, limit) for _ in range(rng.randint(0, 3))})
        drops = {b: rng.randint(0, 40 * slope) for b in breaks}

        def cost(b: int, slope: int = slope, drops: dict[int, int] = drops) -> int:
            return 100 + slope * b - sum(d for x, d in drops.items() if b >= x)

        budget = rng.randint(0, 100 + slope * limit)
        fits = [b for b in range(1, limit + 1) if cost(b) <= budget]
        assert largest_fitting(cost, budget, limit, breaks) == (max(fits) if fits else None)


def test_the_estimate_names_the_batches_where_its_peak_drops() -> None:
    graph = revnet_chain(4, channels=8, size=8)
    report = full_check(graph)
    breaks = estimate(graph, report, report.regions, batch=1).batch_breaks
    assert breaks == (22,)  # 3 float32 temporaries of 4x8x8 per sample reach 64 KiB at batch 22
    peak = {b: estimate(graph, report, report.regions, batch=b).peak_bytes("reversible") for b in (21, 22)}
    assert peak[22] < peak[21]


def test_the_modes_share_their_estimates() -> None:
    from revstudio.diagnostics import estimate as est_module
    from revstudio.diagnostics.estimate_fit import max_batches_that_fit

    graph = revnet_chain(4, channels=8, size=8)
    report = full_check(graph)
    seen: list[int] = []
    original = est_module.estimate

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(kwargs["batch"])
        return original(*args, **kwargs)

    est_module.estimate = counted
    try:
        fits = max_batches_that_fit(graph, report, 64 << 20, MODES, optimizer="adam")
    finally:
        est_module.estimate = original
    assert fits == {m: max_batch_that_fits(graph, report, 64 << 20, mode=m, optimizer="adam") for m in MODES}
    assert len(seen) == len(set(seen)) <= 16  # each batch estimated once, for all three modes (was ~100)


@pytest.mark.parametrize("first", ["ActNorm", "Conv"])
def test_a_first_layer_with_weights_is_priced_as_torch_runs_it(first: str) -> None:
    """A layer whose input needs no gradient (the model's first, or after a Squeeze of the input
    as in Glow): an ActNorm still makes the gradient of x + b, which its shift's gradient sums."""
    torch = pytest.importorskip("torch")
    from revstudio.core.generate import Builder

    torch.set_num_threads(1)
    params = {"out_channels": 16, "kernel_size": 3} if first == "Conv" else {}
    b = Builder("first")
    b.node("Input", "x", shape=[4, 16, 16])
    b.chain("x.out", b.node("Squeeze", "sq"), b.node(first, "n", **params), b.node("Output", "y"))
    _within_one_percent_at_batch_8(b.done())


@pytest.mark.parametrize(("mode", "sections", "inputs"), [("mean", 2, 2), ("mean", 3, 3), ("add", 3, 2)])
def test_split_parts_merged_are_priced_as_torch_runs_them(mode: str, sections: int, inputs: int) -> None:
    """A mean hands every input one gradient (its output's divided by n), not one each; a Split
    whose last part nothing reads joins the others' gradients with zeros for it."""
    torch = pytest.importorskip("torch")
    from revstudio.core.generate import Builder

    torch.set_num_threads(1)
    b = Builder("merged")
    b.node("Input", "x", shape=[6, 16, 16])
    b.chain("x.out", b.node("Conv", "stem", out_channels=6, kernel_size=1), b.node("Split", "s", sections=sections))
    b.node("Merge", "m", mode=mode, inputs=inputs)
    for i in range(inputs):
        b.wire(f"s.out{i}", f"m.in{i}")
    b.chain("m.out", b.node("Conv", "head", out_channels=2, kernel_size=1), b.node("Output", "y"))
    _within_one_percent_at_batch_8(b.done())


def _within_one_percent_at_batch_8(graph) -> None:
    """Standard and checkpoint mode's estimated peaks within 1 % of the measured ones (batch 8)."""
    import torch

    from revstudio.clicmd.memory import measure_modes

    report = full_check(graph, batch=8)
    measured = measure_modes(graph, 8, torch.device("cpu"))
    for mode in ("standard", "checkpoint"):
        real = measured[mode]["peak_bytes"]
        assert abs(report.estimate.peak_bytes(mode) / real - 1) < 0.01, (mode, report.estimate.peak_bytes(mode), real)
