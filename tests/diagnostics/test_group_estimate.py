"""A Group or Repeat inside a reversible region runs as its body's steps, spliced into the region
one at a time: the estimate counts its steps so, every copy's, not the whole body recomputed at
once, and is as exact as for the same blocks drawn flat."""
from __future__ import annotations

from pathlib import Path

import pytest

from revstudio.core.grouping import group_nodes
from revstudio.core.project import loads
from revstudio.diagnostics.check import full_check

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_wired.revs"


def _grouped(blocks: list[list[str]]):
    graph = loads(EXAMPLE.read_text())
    for prefixes in blocks:
        ids = [n for n in graph.nodes if n.startswith(tuple(prefixes))]
        group_nodes(graph, ids, project=graph).do()
    return graph


@pytest.mark.parametrize("blocks", [[["block0"], ["block1"]], [["block0", "block1"]]])
def test_grouped_blocks_keep_the_reversible_estimate(blocks) -> None:
    flat = full_check(loads(EXAMPLE.read_text()), batch=32).estimate
    report = full_check(_grouped(blocks), batch=32)
    (region,) = report.regions
    groups = [n for n in region.nodes if report.nodes[n].type == "Group"]
    assert len(groups) == len(blocks)
    est = report.estimate
    # measured, revnet_wired at batch 32: 1.3 MiB reversible whether grouped or not (flat estimate
    # within 0.1 %); the walk runs a group's body steps one at a time, as the region does
    # (before: 1.075-1.15x the flat estimate, the whole body recomputed at once, and flagged)
    assert est.peak_bytes("reversible") == flat.peak_bytes("reversible")
    assert not any(est.nodes[g].approximate for g in groups)
    assert not any(line.startswith("approximate for: ") for line in est.summary_lines())


def _repeated(times: int):
    """revnet_wired's first block grouped, then repeated ``times`` times in place of both blocks."""
    import json

    from revstudio.core.project import dumps

    data = json.loads(dumps(_grouped([["block0"], ["block1"]])))
    data["nodes"] = [n for n in data["nodes"] if n["id"] != "group2"]
    for node in data["nodes"]:
        if node["id"] == "group1":
            node["type"], node["params"] = "Repeat", {"group": "group1", "times": times}
    data["edges"] = [e for e in data["edges"] if "group2" not in json.dumps(e)] + [["group1.out", "pool.in"]]
    data["groups"].pop("group2")
    return loads(json.dumps(data))


@pytest.mark.parametrize("blocks", [[["block0"], ["block1"]], [["block0", "block1"]]])
def test_grouped_blocks_keep_what_the_flat_graph_keeps_in_standard_mode(blocks) -> None:
    """A region runs its Groups spliced: the Concat ending one block and the Split starting the
    next are fused across the group's edge, so the parts are kept, not the joined value. The
    estimate kept the next group's whole input: half a stream too much per group (+8 %)."""
    flat = full_check(loads(EXAMPLE.read_text()), batch=32).estimate
    grouped = full_check(_grouped(blocks), batch=32).estimate
    assert grouped.activation_bytes("standard") == flat.activation_bytes("standard")


@pytest.mark.parametrize("graph", [lambda: _grouped([["block0"], ["block1"]]), lambda: _grouped([["block0", "block1"]]),
                                   lambda: _repeated(2), lambda: _repeated(4), lambda: _repeated(8)],
                         ids=["per-block", "one-group", "repeat-2", "repeat-4", "repeat-8"])
def test_grouped_and_repeated_blocks_estimates_are_measured(graph) -> None:
    """Measured (live-tensor accounting): before, reversible mode's peak was 7.5 % (one group)
    to 35 % (a Repeat x2) high, a group step walked as its whole body recomputed at once and a
    Repeat of a wired block as one runtime step per copy, where it runs two; standard mode's 7.9 % high on the
    grouped blocks and 7.9-14.6 % on the repeated ones, the Concat/Split fused between the copies
    of a Repeat counted whole; checkpoint mode's 15 % (4 copies) to 80 % (8 copies, kept bytes)
    high, a copy of a wired block weighed as its layers (8) where the compiler cuts segments by
    its couplings (2), so the estimate cut more often than the model does."""
    torch = pytest.importorskip("torch")
    from revstudio.compiler import compile as compile_graph
    from revstudio.diagnostics.estimate import estimate_peak
    from revstudio.diagnostics.gradcheck import random_inputs
    from revstudio.diagnostics.memory import measure_step

    g = graph()
    report = full_check(g, batch=32)
    torch.manual_seed(0)
    model = compile_graph(g, mode="standard")
    inputs = random_inputs(g, 32, torch.float32, requires_grad=False)
    for mode in ("standard", "checkpoint", "reversible"):
        model.mode = mode
        measured = measure_step(model, inputs)
        for est, real in ((estimate_peak(g, report, batch=32, mode=mode), measured["peak_bytes"]),
                          (report.estimate.activation_bytes(mode), measured["kept_bytes"])):
            assert abs(est / real - 1) < 0.01, (mode, est, real)


def test_a_repeat_of_an_additive_coupling_is_priced_as_the_couplings_drawn_flat() -> None:
    """revnet_coupling's Repeat x2 of an AdditiveCoupling: the estimate runs the copies' F and
    G steps as two AdditiveCoupling nodes in a row would (it counted the Repeat as four steps
    sharing its whole recompute and largest output: 7.4 % over the measured peak, now 5.1 %)."""
    import json

    path = EXAMPLE.with_name("revnet_coupling.revs")
    data = json.loads(path.read_text())
    flat = json.loads(json.dumps(data).replace('"blocks.in"', '"c1.in"').replace('"blocks.out"', '"c2.out"'))
    flat["nodes"] = [n for n in flat["nodes"] if n["id"] != "blocks"] + [
        {"id": c, "type": "AdditiveCoupling", "params": {"f": "f", "g": "g"}, "pos": [0, 0]} for c in ("c1", "c2")]
    flat["edges"].append(["c1.out", "c2.in"])
    flat["groups"].pop("block")
    for batch in (16, 32):
        repeated = full_check(loads(path.read_text()), batch=batch).estimate
        drawn = full_check(loads(json.dumps(flat)), batch=batch).estimate
        assert repeated.peak_bytes("reversible") == drawn.peak_bytes("reversible")
        assert not any(n.approximate for n in repeated.nodes.values())
