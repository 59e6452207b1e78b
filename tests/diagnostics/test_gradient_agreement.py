"""Reversible vs standard gradients on the same weights and batch: the example projects,
generated RevNets, and couplings with dropout and batch norm inside (random streams and
running statistics must match too)."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio.core.generate import Builder, revnet_chain  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.diagnostics.gradcheck import compare_modes, random_inputs  # noqa: E402

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "resources" / "examples").glob("*.revs"))


@pytest.fixture(autouse=True)
def _few_threads() -> None:
    torch.set_num_threads(1)  # 2 cores shared by the whole suite


def test_examples_exist() -> None:
    assert len(EXAMPLES) >= 4, "resources/examples should hold the example projects"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_agree_to_1e_10_in_float64(path: Path) -> None:
    graph = load(path)
    report = compare_modes(graph, batch=2, dtype="float64")
    assert report.ok, report.failures()
    assert report.max_error <= 1e-10
    assert report.gradient_norm > 0
    names = {t.name for t in report.parameters}
    assert names == {name for name, _ in _compiled_names(graph)}  # matched by name, none missing
    assert len(report.inputs) == sum(1 for n in graph if n.type == "Input")


def _compiled_names(graph: Graph) -> list[tuple[str, object]]:
    from revstudio.compiler import compile as compile_graph

    return list(compile_graph(graph, mode="standard", device="cpu", dtype=torch.float64).named_parameters())


@pytest.mark.parametrize("wired", [True, False], ids=["wired", "coupling"])
def test_generated_revnets_agree_and_report_inversion(wired: bool) -> None:
    graph = revnet_chain(4, channels=4, size=4, wired=wired)
    report = compare_modes(graph, batch=2, dtype="float64")
    assert report.ok, report.failures()
    assert len(report.inversion) == 1
    assert 0 <= report.max_inversion_error <= 1e-12
    data = report.to_json()
    assert data["ok"] is True and data["reference"] == "standard" and data["dtype"] == "float64"
    assert set(data["parameters"]) == {t.name for t in report.parameters}
    assert all(set(v) == {"error", "max_abs", "norm"} for v in data["parameters"].values())


def test_float32_agrees_within_its_tolerance_and_a_tight_tolerance_fails() -> None:
    graph = revnet_chain(3, channels=4, size=4)
    loose = compare_modes(graph, batch=2, dtype="float32")
    assert loose.ok, loose.failures()
    assert loose.tolerance == 1e-4
    strict = compare_modes(graph, batch=2, dtype="float32", tolerance=1e-15)
    # float32 rounding differs between the two execution orders: a tolerance this
    # tight must fail, and the failures must name the tensors
    assert not strict.ok
    assert any("weight" in line or "bias" in line or "output" in line for line in strict.failures())


def _noisy_block_graph() -> Graph:
    """A wired RevNet block whose F has BatchNorm and Dropout: random and stateful."""
    b = Builder("noisy")
    b.node("Input", "x", shape=[4, 5, 5])
    b.node("Split", "s", sections=2)
    b.wire("x", "s")
    b.node("Conv", "f1", out_channels=2, kernel_size=3, padding="same")
    b.node("Norm", "bn", kind="batch")
    b.node("Activation", "act", fn="tanh")
    b.node("Dropout", "drop", p=0.3)
    f = b.chain("s.out1", "f1", "bn", "act", "drop")
    b.node("Merge", "m1", mode="add")
    b.wire("s.out0", "m1.in0")
    b.wire(f, "m1.in1")
    b.node("Conv", "g1", out_channels=2, kernel_size=3, padding="same")
    g = b.chain("m1.out", "g1")
    b.node("Merge", "m2", mode="add")
    b.wire("s.out1", "m2.in0")
    b.wire(g, "m2.in1")
    b.node("Concat", "cat")
    b.wire("m1.out", "cat.in0")
    b.wire("m2.out", "cat.in1")
    b.node("Output", "y")
    b.wire("cat.out", "y")
    return b.done()


def test_dropout_and_batch_norm_replay_exactly() -> None:
    graph = _noisy_block_graph()
    report = compare_modes(graph, batch=4, dtype="float64", seed=3)
    assert report.ok, report.failures()
    # running statistics were compared too: updated once, identically, in both modes
    assert any("running_mean" in t.name for t in report.buffers)
    assert report.inversion  # the block is one reversible region


def test_checkpoint_mode_can_be_compared_too() -> None:
    report = compare_modes(revnet_chain(2, channels=4, size=4), batch=2, mode="checkpoint")
    assert report.ok and report.mode == "checkpoint"


def test_random_inputs_are_deterministic_per_seed() -> None:
    graph = revnet_chain(1, channels=4, size=4)
    a = random_inputs(graph, 2, torch.float64, seed=5)
    b = random_inputs(graph, 2, torch.float64, seed=5)
    c = random_inputs(graph, 2, torch.float64, seed=6)
    assert a[0].shape == (2, 4, 4, 4) and a[0].requires_grad
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], c[0])


def test_a_graph_without_outputs_is_a_clear_error() -> None:
    graph = revnet_chain(1, channels=4, size=4)
    graph.remove_node("logits")
    with pytest.raises(ValueError, match="no Output node"):
        compare_modes(graph)


def test_flows_compare_the_log_determinant_and_its_gradients() -> None:
    from revstudio.core.generate import glow_repeat

    report = compare_modes(glow_repeat(2), batch=2, seed=3)
    assert report.ok, report.failures()
    names = [e.name for e in report.outputs]
    assert names == ["output z", "output log-determinant"]
    assert report.outputs[1].norm > 0
    # a flow whose log-determinant lost its gradient in reversible mode would fail here
    assert all(e.error <= 1e-10 for e in report.parameters)
