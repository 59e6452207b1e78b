"""The catalog inside real graphs: the project's checker and compiler read these specs.

Small end-to-end graphs (a BiRNN as the very first layer, a Glow-style flow with
ActNorm initialised from data, a Repeat of coupling blocks) check clean, report
the parameter counts the built modules have, and run.
"""
from __future__ import annotations

import pytest
from catalog_kit import chain

from revstudio.core.check import check
from revstudio.core.graph import Graph

torch = pytest.importorskip("torch")


def _line(*nodes: tuple[str, str, dict], shape: list[int]) -> Graph:  # type: ignore[type-arg]
    g = Graph("t")
    g.add_node("Input", "x", {"shape": shape})
    prev = "x.out"
    for node_id, type_id, params in nodes:
        g.add_node(type_id, node_id, params)
        g.connect(prev, f"{node_id}.in")
        prev = f"{node_id}.out"
    g.add_node("Output", "y", {})
    g.connect(prev, "y.in")
    return g


def _compiled_count(graph: Graph) -> int:
    from revstudio.compiler import compile as compile_graph

    model = compile_graph(graph, mode="standard", device="cpu")
    return sum(p.numel() for p in model.parameters())


def test_birnn_can_be_the_very_first_layer() -> None:
    g = _line(("rnn", "BiRNN", {"hidden_size": 8, "cell": "gru"}), ("head", "Linear", {"out_features": 3}),
              shape=[5, 12])
    report = check(g)
    assert report.valid, [str(d) for d in report.diagnostics]
    assert report.shape("rnn.out") == (16, 12)
    assert report.parameters == _compiled_count(g)


def test_glow_step_checks_and_initialises_actnorm_from_data() -> None:
    g = _line(("sq", "Squeeze", {}), ("an", "ActNorm", {}), ("ic", "InvConv1x1", {}),
              ("cp", "AffineCoupling", {"net": "net"}), shape=[1, 4, 4])
    g.groups["net"] = chain(("Conv", {"out_channels": 8, "kernel_size": 3}),
                            ("Conv", {"out_channels": 4, "kernel_size": 1, "init": "zeros"}))
    report = check(g)
    assert report.valid, [str(d) for d in report.diagnostics]
    assert report.shape("sq.out") == (4, 2, 2)
    from revstudio.compiler import compile as compile_graph

    model = compile_graph(g, mode="standard", device="cpu")
    assert report.parameters == sum(p.numel() for p in model.parameters())
    x = torch.randn(16, 1, 4, 4) * 3 + 1
    model(x)
    actnorm = next(m for m in model.modules() if type(m).__name__ == "ActNorm")
    assert bool(actnorm.initialized)


def test_body_errors_reach_the_coupling_node() -> None:
    g = _line(("cp", "AdditiveCoupling", {"f": "f"}), shape=[4, 6])
    g.groups["f"] = chain(("Conv", {"out_channels": 3, "kernel_size": 3}))
    report = check(g)
    assert not report.valid
    messages = [d.message for d in report.diagnostics if d.node == "cp"]
    assert any("maps x2 (2x6) to 3x6" in m for m in messages), messages


def test_repeat_of_couplings_counts_each_copy() -> None:
    g = _line(("r", "Repeat", {"group": "block", "times": 3}), shape=[4, 5])
    g.groups["f"] = chain(("Conv", {"out_channels": 2, "kernel_size": 3}))
    g.groups["block"] = chain(("AdditiveCoupling", {"f": "f", "g": "f"}))
    report = check(g)
    assert report.valid, [str(d) for d in report.diagnostics]
    per_conv = 2 * 2 * 3 + 2
    assert report.parameters == 3 * 2 * per_conv == _compiled_count(g)
