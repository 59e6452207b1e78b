"""The static estimate next to the measurement: exact in standard and checkpoint mode on
the RevNet examples, and reversible memory measured flat with depth."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio.clicmd.memory import measure_modes  # noqa: E402
from revstudio.core.generate import revnet_chain  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"
LOSS = 4  # the float32 scalar loss is alive after forward too


@pytest.fixture(autouse=True)
def _few_threads() -> None:
    torch.set_num_threads(1)


@pytest.mark.parametrize("name", ["revnet_wired", "revnet_coupling", "glow_flow"])
def test_estimate_matches_measured_kept_bytes(name: str) -> None:
    graph = load(EXAMPLES / f"{name}.revs")
    report = full_check(graph, batch=2)
    assert report.valid and report.regions and report.estimate is not None
    measured = measure_modes(graph, 2, torch.device("cpu"))
    est = report.estimate.totals()
    if name != "glow_flow":  # ActNorm/InvConv internals are modelled, not counted
        assert measured["standard"]["kept_bytes"] == est["standard"]["activation_bytes"] + LOSS
        assert measured["checkpoint"]["kept_bytes"] == est["checkpoint"]["activation_bytes"] + LOSS
    # reversible: the estimate counts the kept streams; the runtime adds only a
    # small constant (its inversion-error samples)
    assert est["reversible"]["activation_bytes"] < measured["reversible"]["kept_bytes"]
    assert est["reversible"]["activation_bytes"] < est["standard"]["activation_bytes"]


def test_reversible_kept_bytes_are_flat_with_depth_measured_and_estimated() -> None:
    kept, estimated, standard = [], [], []
    for blocks in (2, 8):
        graph = revnet_chain(blocks, channels=8, size=8)
        report = full_check(graph, batch=2)
        measured = measure_modes(graph, 2, torch.device("cpu"))
        kept.append(measured["reversible"]["kept_bytes"])
        standard.append(measured["standard"]["kept_bytes"])
        estimated.append(report.estimate.totals()["reversible"]["activation_bytes"])
    assert kept[0] == kept[1]
    assert estimated[0] == estimated[1]
    assert standard[1] > 3 * standard[0] // 2
    assert kept[1] < standard[1]


def test_full_check_fills_regions_estimate_and_near_misses() -> None:
    graph = revnet_chain(3, channels=4, size=4)
    report = full_check(graph)
    data = report.to_json()
    assert data["regions"] and data["regions"][0]["nodes"]
    est = data["estimate"]
    assert set(est["modes"]) == {"standard", "reversible", "checkpoint"}
    region_id = data["regions"][0]["id"]
    assert est["regions"][region_id]["saved_bytes"] > 0
    assert set(est["nodes"]) == set(data["nodes"])


def test_full_check_never_raises_on_a_broken_graph() -> None:
    graph = revnet_chain(2, channels=4, size=4)
    graph.add_node("Conv", "lonely", {"out_channels": 3})  # unconnected input: an error
    graph.set_param("b0_f_conv1", "out_channels", 3)  # F no longer matches its stream
    report = full_check(graph)
    assert not report.valid
    assert report.estimate is not None
    assert report.estimate.nodes["lonely"].activation_bytes["standard"] == 0


def test_revstudio_check_is_the_full_check() -> None:
    import revstudio

    assert revstudio.check is full_check


def test_region_inputs_freed_by_the_runtime_stop_counting() -> None:
    """A conv stem feeds a region: the runtime frees the stem's output (storage shrunk
    in place) once the region has consumed it; the measurement must see that."""
    from revstudio.compiler import compile as compile_graph
    from revstudio.core.generate import Builder, wired_block
    from revstudio.diagnostics.memory import measure_step

    b = Builder("stem")
    b.node("Input", "x", shape=[4, 4, 4])
    b.node("Conv", "stem", out_channels=8, kernel_size=3, padding="same")
    src = b.chain("x.out", "stem")
    for i in range(2):
        src = wired_block(b, src, f"b{i}", 8)
    b.node("Output", "y")
    b.wire(src, "y")
    graph = b.done()
    model = compile_graph(graph, mode="reversible", device="cpu")
    x = torch.randn(2, 4, 4, 4)
    exact = measure_step(model, (x,), timing_runs=0)
    naive = measure_step(model, (x,), timing_runs=0, exact_resizes=False)
    stem_out = 2 * 8 * 4 * 4 * 4
    assert naive["kept_bytes"] - exact["kept_bytes"] == stem_out
