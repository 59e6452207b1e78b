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
    _assert_checkpoint_saves_with_standard_gradients(model, torch.randn(8, 8, 8, 8))


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


def _regions(model):  # type: ignore[no-untyped-def]
    """The top-level runtime regions of a compiled or exported model (module order)."""
    out = []
    for module in model.modules():
        regions = getattr(module, "_regions", None)
        if regions is None:
            regions = [v for k, v in vars(module).items() if k.startswith("_region_")]
        out += list(regions)
    return out


def test_cuts_fall_between_the_copies_of_a_repeat() -> None:
    from revstudio.compiler.checkpointing import piece_weights, region_cuts

    # one plan step, a Repeat of 16 AdditiveCoupling blocks (F and G: 2 computing steps each)
    pieces = [piece_weights("Repeat", 16, 2)]
    cuts = region_cuts(pieces)
    assert len(cuts) == 5 and all(step == 0 for step, _copy in cuts)  # sqrt(32) -> 6 segments
    copies = [c for _s, c in cuts]
    assert copies == sorted(copies) and 0 < copies[0] and copies[-1] < 16
    # flat weights cut as region_segments does
    assert region_cuts([[0], [1], [1], [0]] * 4) == [(i, 0) for i, _e in region_segments([0, 1, 1, 0] * 4)[1:]]
    assert region_cuts([piece_weights("Repeat", 1, 2)]) == []


def test_a_repeat_is_checkpointed_in_segments_with_standard_gradients() -> None:
    from revstudio.diagnostics.check import full_check
    from revstudio.diagnostics.estimate_bodies import _Bodies
    from revstudio.diagnostics.estimate_segments import _region_segment_nodes
    from revstudio.diagnostics.estimate_walk import _Walker

    torch.manual_seed(0)
    graph = revnet_chain(16, channels=8, size=8, wired=False)  # one Repeat: a single plan step
    model = compile_graph(graph, mode="standard")
    model.train()
    (region,) = [r for r in _regions(model) if r.id == "region-blocks"]
    assert len(region.segments) == 6
    # the estimate cuts the same region into the same segments
    report = full_check(graph)
    walker = _Walker(graph, report, 1, 4, _Bodies(graph, report, 1, 4))
    assert len(_region_segment_nodes(walker, report.regions[0])[1]) == 6
    _assert_checkpoint_saves_with_standard_gradients(model, torch.randn(8, 8, 8, 8))


def test_the_export_cuts_a_repeat_where_the_compiler_does() -> None:
    from revstudio.codegen import export

    graph = revnet_chain(9, channels=4, size=4, wired=False)
    torch.manual_seed(0)
    compiled = compile_graph(graph, mode="checkpoint")
    namespace: dict[str, object] = {"__name__": "exported_for_test"}
    exec(compile(export(graph), "exported.py", "exec"), namespace)  # generated code, project text only as data
    exported = namespace["Model"]()  # type: ignore[operator]
    exported.load_state_dict(compiled.state_dict())
    exported.mode = "checkpoint"
    segs = [[(a, b) for a, b, _i, _o in r.segments] for r in _regions(compiled)]
    assert len(segs[0]) == 4  # 18 computing steps -> 4 segments
    assert segs == [[(a, b) for a, b, _i, _o in r.segments] for r in _regions(exported)]
    x = torch.randn(2, 4, 4, 4)
    assert all(torch.equal(a, b) for a, b in zip(_grads(compiled, x), _grads(exported, x)))


def _assert_checkpoint_saves_with_standard_gradients(model, x) -> None:  # type: ignore[no-untyped-def]
    """Checkpoint mode peaks at most 60 % of standard's, with standard's gradients."""
    peaks, grads = {}, {}
    for mode in ("standard", "checkpoint"):
        model.mode = mode
        peaks[mode] = measure_step(model, (x,), timing_runs=0)["peak_bytes"]
        grads[mode] = _grads(model, x)
    assert peaks["checkpoint"] <= 0.6 * peaks["standard"]
    for a, b in zip(grads["standard"], grads["checkpoint"]):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
