"""The static memory estimate: exact byte counts on small graphs, flat reversible
memory with depth, and robustness on graphs with errors."""
from __future__ import annotations

from typing import Any

import pytest

from revstudio.core.check import check
from revstudio.core.graph import Graph
from revstudio.core.spec import Registry
from revstudio.diagnostics.estimate import MODES, estimate, fmt_bytes

F32 = 4


@pytest.fixture
def run(fake_registry: Registry):  # type: ignore[no-untyped-def]
    """check with the stand-in specs, then estimate: (report, estimate)."""

    def _run(graph: Graph, regions: list[Any], batch: int = 1, **kw: Any):  # type: ignore[no-untyped-def]
        report = check(graph, fake_registry)
        return report, estimate(graph, report, regions, batch=batch, **kw)

    return _run


def test_conv_relu_chain_counts_each_kept_tensor_once(run: Any, fake_revnet: Any) -> None:
    g = Graph()
    g.add_node("Input", "x", {"shape": [2, 5, 5]})
    g.add_node("Conv", "c1", {"out_channels": 3, "kernel_size": 3})
    g.add_node("Activation", "r", {"fn": "relu"})
    g.add_node("Conv", "c2", {"out_channels": 2, "kernel_size": 3})
    g.add_node("Output", "y", {})
    for src, dst in (("x", "c1"), ("c1", "r"), ("r", "c2"), ("c2", "y")):
        g.connect(f"{src}.out", f"{dst}.in")
    report, est = run(g, [], batch=3)
    assert report.valid
    nodes = est.nodes
    # c1 keeps the caller's input (not counted); relu keeps its result, which c2
    # also keeps as its input: one tensor; c1's output is not needed; y is returned
    assert nodes["x"].activation_bytes["standard"] == 0
    assert nodes["c1"].activation_bytes["standard"] == 0
    assert nodes["r"].activation_bytes["standard"] == 3 * 3 * 25 * F32
    assert nodes["c2"].activation_bytes["standard"] == 3 * 2 * 25 * F32
    assert nodes["c1"].parameter_bytes == (3 * 2 * 9 + 3) * F32
    totals = est.totals()
    assert totals["standard"]["activation_bytes"] == 3 * 5 * 25 * F32
    assert totals["standard"]["parameter_bytes"] == est.parameter_bytes()
    # without regions reversible mode is plain autograd; checkpoint mode recomputes
    # the run c1 -> r -> c2, keeping only its input (the caller's) and the output
    assert totals["reversible"]["activation_bytes"] == 3 * 5 * 25 * F32
    assert totals["checkpoint"]["activation_bytes"] == 3 * 2 * 25 * F32


def test_reversible_region_keeps_only_its_outputs(run: Any, fake_revnet: Any) -> None:
    g, region = fake_revnet(blocks=3)
    report, est = run(g, [region], batch=2, stream_dtype="float32")
    assert report.valid, report.diagnostics
    cat_bytes = 2 * 8 * 16 * F32
    rev = est.totals()["reversible"]["activation_bytes"]
    returned = 2 * 8 * F32  # the pooled output goes back to the caller
    assert rev == cat_bytes + returned  # global_avg keeps nothing of its input
    assert est.nodes["cat"].activation_bytes["reversible"] == cat_bytes
    assert all(est.nodes[n].activation_bytes["reversible"] == 0 for n in region.nodes if n != "cat")
    region_est = est.regions["r0"]
    assert region_est.reversible_bytes == cat_bytes
    assert region_est.saved_bytes == region_est.standard_bytes - cat_bytes > 0
    assert est.saved_by_region("r0") == region_est.saved_bytes


def test_float32_regions_keep_float64_streams_by_default(run: Any, fake_revnet: Any) -> None:
    g, region = fake_revnet(blocks=3)
    _, est = run(g, [region], batch=2)
    assert est.nodes["cat"].activation_bytes["reversible"] == 2 * 8 * 16 * 8
    assert est.nodes["cat"].activation_bytes["standard"] == 0  # pool(global_avg) keeps nothing


def test_reversible_is_flat_with_depth_and_standard_grows(run: Any, fake_revnet: Any) -> None:
    def totals(blocks: int) -> dict:
        graph, region = fake_revnet(blocks)
        return run(graph, [region])[1].totals()

    small, large = totals(2), totals(8)
    assert small["reversible"]["activation_bytes"] == large["reversible"]["activation_bytes"]
    assert large["standard"]["activation_bytes"] > 3 * small["standard"]["activation_bytes"]
    assert large["reversible"]["activation_bytes"] < large["standard"]["activation_bytes"]
    assert large["checkpoint"]["activation_bytes"] == small["checkpoint"]["activation_bytes"]


def test_dtype_comes_from_the_input_node(run: Any, fake_revnet: Any) -> None:
    g, region = fake_revnet(blocks=1, dtype="float64")
    _, est = run(g, [region])
    assert est.dtype == "float64" and est.element_bytes == 8
    g32, region32 = fake_revnet(blocks=1)
    _, est32 = run(g32, [region32])
    assert est.totals()["standard"]["total_bytes"] == 2 * est32.totals()["standard"]["total_bytes"]


def test_graph_with_errors_still_estimates_what_it_can(run: Any, fake_revnet: Any) -> None:
    g = Graph()
    g.add_node("Input", "x", {"shape": [2, 5, 5]})
    g.add_node("Conv", "c", {"out_channels": 2, "kernel_size": 1})
    g.add_node("Activation", "r", {"fn": "relu"})
    g.add_node("Conv", "bad", {"out_channels": 3})
    g.add_node("Output", "y", {})
    g.connect("x.out", "c.in")
    g.connect("c.out", "r.in")
    g.connect("r.out", "y.in")  # 'bad' has no input: an error
    report, est = run(g, [])
    assert not report.valid
    assert est.nodes["r"].activation_bytes["standard"] == 2 * 25 * F32
    assert est.nodes["bad"].activation_bytes["standard"] == 0
    json = est.to_json()
    assert set(json) == {"batch", "dtype", "modes", "nodes", "regions", "notes"}
    assert set(json["modes"]) == set(MODES)


def test_layers_no_gradient_reaches_keep_nothing(run: Any, fake_revnet: Any) -> None:
    """The caller's inputs need no gradient: a dropout straight after one is not recorded and
    keeps no mask, until a layer with weights starts the graph autograd keeps."""
    from revstudio.core.generate import Builder

    b = Builder("untracked")
    b.node("Input", "x", shape=[2, 5, 5])
    b.chain("x.out", b.node("Dropout", "r", p=0.5), b.node("Conv", "c", out_channels=2, kernel_size=1),
            b.node("Activation", "r2", fn="relu"), b.node("Output", "y"))
    _, est = run(b.done(), [])
    assert est.nodes["r"].activation_bytes["standard"] == 2 * 25 * F32  # its output, which the Conv keeps
    assert est.nodes["r2"].activation_bytes["standard"] == 2 * 25 * F32


def test_fmt_bytes() -> None:
    assert fmt_bytes(512) == "512 B"
    assert fmt_bytes(1536) == "1.5 KiB"
    assert fmt_bytes(3 * 1024**3) == "3.0 GiB"
