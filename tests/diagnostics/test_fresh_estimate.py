"""The estimate knows which couplings' backward writes over F's output, as the runtime does.

Where F's output is memory nothing else holds, a pair's backward update uses it as a
temporary (``runtime_streams.update_over``), with fewer temporaries in fewer pieces; the
estimate counts that by the catalog's ``fresh_output`` (``stream_updates.fresh_output``).
Here graphs whose F ends in different layers are compiled, the runtime's decisions recorded,
and the estimate's held to them, and to the measured peak.
"""
from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.compiler import runtime_steps  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.diagnostics.estimate import estimate_peak  # noqa: E402
from revstudio.diagnostics.gradcheck import random_inputs  # noqa: E402
from revstudio.diagnostics.memory import compare_modes  # noqa: E402
from revstudio.diagnostics.stream_updates import additive_updates, fresh_output  # noqa: E402

Layer = tuple[str, dict[str, Any]]
CONV: Layer = ("Conv", {"out_channels": 4, "kernel_size": 3})


def _body(name: str, layers: list[Layer]) -> Graph:
    body = Graph(name)
    body.add_node("GroupInput", "gin", {"port": "in"})
    prev = "gin.out"
    for i, (kind, params) in enumerate(layers):
        body.add_node(kind, f"n{i}", params)
        body.connect(prev, f"n{i}.in")
        prev = f"n{i}.out"
    body.add_node("GroupOutput", "gout", {"port": "out"})
    body.connect(prev, "gout.in")
    return body


def wired(layers: list[Layer], blocks: int = 2, groups: dict[str, Graph] | None = None) -> Graph:
    """``blocks`` wired couplings on 8 channels of 8x8, each F the ``layers`` (4 -> 4 channels)."""
    g = Graph("fresh")
    g.groups.update(groups or {})
    g.add_node("Input", "x", {"shape": [8, 8, 8]})
    prev = "x.out"
    for b in range(blocks):
        g.add_node("Split", f"s{b}", {"sections": 2})
        g.connect(prev, f"s{b}.in")
        last = f"s{b}.out1"
        for i, (kind, params) in enumerate(layers):
            g.add_node(kind, f"f{b}_{i}", params)
            g.connect(last, f"f{b}_{i}.in")
            last = f"f{b}_{i}.out"
        g.add_node("Merge", f"m{b}", {"mode": "add"})
        g.connect(f"s{b}.out0", f"m{b}.in0")
        g.connect(last, f"m{b}.in1")
        g.add_node("Concat", f"c{b}", {})
        g.connect(f"s{b}.out1", f"c{b}.in0")  # swap the halves, so both get updated in turn
        g.connect(f"m{b}.out", f"c{b}.in1")
        prev = f"c{b}.out"
    g.add_node("Output", "y", {})
    g.connect(prev, "y.in")
    return g


def coupling_node(f: list[Layer], g_layers: list[Layer] | None) -> Graph:
    groups = {"F": _body("F", f)}
    params: dict[str, Any] = {"f": "F"}
    if g_layers is not None:
        groups["G"] = _body("G", g_layers)
        params["g"] = "G"
    g = Graph("fresh_node")
    g.groups.update(groups)
    g.add_node("Input", "x", {"shape": [8, 8, 8]})
    g.add_node("AdditiveCoupling", "ac", params)
    g.add_node("Output", "y", {})
    g.connect("x.out", "ac.in")
    g.connect("ac.out", "y.in")
    return g


def _estimated(graph: Graph) -> list[bool]:
    report = full_check(graph)
    assert report.valid, report.errors
    found = []
    for region in report.regions:
        for coupling in region.couplings.values():
            found.append(fresh_output(graph, graph.groups, report.groups, coupling.f, report.nodes))
        for sid in region.steps:
            node = graph.nodes[sid]
            if node.type == "AdditiveCoupling":
                info = report.nodes[sid]
                found += [fresh for _, fresh in additive_updates(graph.groups, report.groups, node.type,
                                                                  node.params, info.inputs.get("in"), set())]
    return found


def record(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Per coupling backward, in order: whether it wrote its update over F's output. (Wrapping
    ``sole`` itself would hold F's output by one more name, and change its answer.)"""
    seen: list[bool] = []
    backward, over = runtime_steps.Coupling.backward, runtime_steps.update_over

    def recorded(self: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(False)
        backward(self, *args, **kwargs)

    def marked(*args: Any) -> Any:
        seen[-1] = True
        return over(*args)

    monkeypatch.setattr(runtime_steps.Coupling, "backward", recorded)
    monkeypatch.setattr(runtime_steps, "update_over", marked)
    return seen


def _observed(graph: Graph, monkeypatch: pytest.MonkeyPatch, batch: int = 4) -> list[bool]:
    model = compile_graph(graph, device="cpu")
    model.train()
    seen = record(monkeypatch)
    x = torch.randn(batch, 8, 8, 8, requires_grad=True)
    model(x).square().sum().backward()
    monkeypatch.undo()
    return seen


CASES: list[tuple[str, list[Layer], bool]] = [
    ("conv", [CONV], True),
    ("conv-relu", [CONV, ("Activation", {"fn": "relu"})], False),
    ("conv-tanh-inplace", [CONV, ("Activation", {"fn": "tanh", "inplace": True})], False),
    ("conv-gelu", [CONV, ("Activation", {"fn": "gelu"})], True),
    ("conv-identity", [CONV, ("Activation", {"fn": "identity"})], True),
    ("relu-identity", [CONV, ("Activation", {"fn": "relu"}), ("Activation", {"fn": "identity"})], False),
    ("conv-dropout", [CONV, ("Dropout", {"p": 0.2})], True),
    ("conv-dropout0", [CONV, ("Activation", {"fn": "sigmoid"}), ("Dropout", {"p": 0.0})], False),
    ("conv-batchnorm", [CONV, ("Norm", {"kind": "batch"})], True),
    ("relu-conv", [("Activation", {"fn": "relu"}), CONV], True),
]


@pytest.mark.parametrize("name,layers,fresh", CASES, ids=[c[0] for c in CASES])
def test_wired_couplings(monkeypatch: pytest.MonkeyPatch, name: str, layers: list[Layer], fresh: bool) -> None:
    graph = wired(layers)
    assert _estimated(graph) == [fresh, fresh]
    assert _observed(graph, monkeypatch) == [fresh, fresh]


@pytest.mark.parametrize("body,fresh", [([CONV, ("Activation", {"fn": "tanh"})], False),
                                        ([("Activation", {"fn": "tanh"}), CONV], True)])
def test_an_f_that_is_a_group_node_is_looked_into(monkeypatch: pytest.MonkeyPatch, body: list[Layer],
                                                  fresh: bool) -> None:
    graph = wired([("Group", {"group": "B"})], groups={"B": _body("B", body)})
    assert _estimated(graph) == [fresh, fresh]
    assert _observed(graph, monkeypatch) == [fresh, fresh]


def test_an_additive_coupling_nodes_f_and_g(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = coupling_node([CONV], [CONV, ("Activation", {"fn": "tanh"})])
    assert _estimated(graph) == [True, False]  # F, G
    assert _observed(graph, monkeypatch) == [False, True]  # backward: G first


def _peaks(graph: Graph, batch: int) -> tuple[int, int]:
    report = full_check(graph)
    model = compile_graph(graph, device="cpu")
    model.train()
    inputs = random_inputs(graph, batch, torch.float32, 0, torch.device("cpu"), requires_grad=False)
    measured = compare_modes(model, inputs, ("reversible",))["reversible"]["peak_bytes"]
    return measured, estimate_peak(graph, report, batch=batch, mode="reversible")


@pytest.mark.parametrize("wired_blocks", [True, False], ids=["wired", "coupling-nodes"])
@pytest.mark.parametrize("batch", [1, 4, 21])
def test_the_peak_falls_as_estimated(monkeypatch: pytest.MonkeyPatch, wired_blocks: bool, batch: int) -> None:
    """A small stream's update works in one piece, at the step's peak: written over F's output,
    it needs two temporaries of the stream value's size, not three, and the step peaks lower
    by up to one such value, measured as estimated (RevNet blocks, F and G Conv -> ReLU -> Conv)."""
    from revstudio.core.generate import revnet_chain
    from revstudio.diagnostics import stream_updates

    torch.set_num_threads(1)
    graph = revnet_chain(3, channels=8, size=8, wired=wired_blocks)
    measured, estimated = _peaks(graph, batch)
    monkeypatch.setattr(runtime_steps, "sole", lambda f: False)
    monkeypatch.setattr(stream_updates, "fresh_output", lambda *args: False)  # wired couplings' F
    monkeypatch.setattr(stream_updates, "body_output_fresh", lambda *args: False)  # F and G group bodies
    measured_before, estimated_before = _peaks(graph, batch)
    assert measured < measured_before
    assert abs((estimated_before - estimated) - (measured_before - measured)) <= 0.01 * measured, (
        measured_before, measured, estimated_before, estimated)
    assert abs(estimated / measured - 1) < 0.15
