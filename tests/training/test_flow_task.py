"""A flow task needs every layer from the Inputs to the Output invertible: a non-invertible one
would leave its Jacobian out of the log-likelihood, and the run is refused naming it."""
from __future__ import annotations

import pytest

from revstudio.core.generate import Builder
from revstudio.core.graph import Graph
from revstudio.diagnostics.check import full_check
from revstudio.training.task import DataError, infer_task


def chain(*layers: tuple[str, str, dict]) -> Graph:
    b = Builder("flow")
    b.node("Input", "x", shape=[4, 4, 4])
    ids = [b.node(type_id, node_id, **params) for node_id, type_id, params in layers]
    b.chain("x", *ids, b.node("Output", "z"))
    return b.graph


MIXED = (("an", "ActNorm", {}), ("conv", "Conv", {"out_channels": 4, "kernel_size": 3, "padding": "same"}),
         ("inv", "InvConv1x1", {}))


@pytest.mark.parametrize("requested", ["auto", "flow"])
def test_a_flow_through_a_non_invertible_layer_is_refused_naming_it(requested: str) -> None:
    g = chain(*MIXED)
    with pytest.raises(DataError, match=r"invertible: node 'conv' \(Conv\) is not, so the negative "
                                        r"log-likelihood would miss its log-determinant"):
        infer_task(g, full_check(g), requested)
    assert infer_task(g, full_check(g), "regression").kind == "regression"  # the way out it names


def test_a_multi_scale_flow_with_split_flatten_and_concat_is_a_flow() -> None:
    g = Graph("multiscale")
    for node_id, type_id, params in [
            ("x", "Input", {"shape": [4, 4, 4]}), ("an", "ActNorm", {}), ("s", "Split", {"sections": 2}),
            ("sq", "Squeeze", {"factor": 2}), ("inv", "InvConv1x1", {}), ("f0", "Flatten", {}),
            ("f1", "Flatten", {}), ("c", "Concat", {}), ("z", "Output", {})]:
        g.add_node(type_id, node_id, params)
    for src, dst in [("x.out", "an.in"), ("an.out", "s.in"), ("s.out0", "sq.in"), ("sq.out", "inv.in"),
                     ("inv.out", "f0.in"), ("s.out1", "f1.in"), ("f0.out", "c.in0"), ("f1.out", "c.in1"),
                     ("c.out", "z.in")]:
        g.connect(src, dst)
    report = full_check(g)
    assert report.valid, report.errors
    assert infer_task(g, report, "flow").kind == infer_task(g, report).kind == "flow"


def two_scale_flow() -> Graph:
    """A multi-scale flow left with its two parts as two Outputs of different shapes (FrEIA's habit)."""
    g = Graph("two-scale")
    for node_id, type_id, params in [
            ("x", "Input", {"shape": [4, 4, 4]}), ("an", "ActNorm", {}), ("s", "Split", {"sections": 2}),
            ("sq", "Squeeze", {"factor": 2}), ("inv", "InvConv1x1", {}), ("z0", "Output", {}),
            ("z1", "Output", {})]:
        g.add_node(type_id, node_id, params)
    for src, dst in [("x.out", "an.in"), ("an.out", "s.in"), ("s.out0", "sq.in"), ("sq.out", "inv.in"),
                     ("inv.out", "z0.in"), ("s.out1", "z1.in")]:
        g.connect(src, dst)
    return g


def test_a_flow_split_over_several_outputs_says_why_it_is_no_flow_and_how_to_join_them() -> None:
    g = two_scale_flow()
    report = full_check(g)
    assert report.valid, report.errors
    guess = infer_task(g, report)
    assert guess.kind == "regression" and guess.not_flow is not None  # (labels may still mean regression)
    assert ("not a flow: the graph has a log-determinant (node 'an') and its 2 Outputs (z0, z1) hold the "
            "Inputs' 64 values together") in guess.not_flow
    assert "flatten each with a Flatten node and join them with a Concat (dim 0)" in guess.not_flow
    with pytest.raises(DataError, match=r"reads one Output, the graph has 2 \(z0, z1\); flatten each with a "
                                        r"Flatten node and join them with a Concat \(dim 0\)"):
        infer_task(g, report, "flow")  # (a Concat alone cannot join 8x2x2 and 2x4x4)
    assert infer_task(g, report, "regression").not_flow is None  # asked for: nothing to explain


def test_a_two_output_flow_fed_images_without_labels_is_told_why_it_is_no_flow(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from revstudio.training.data import load_data

    g = two_scale_flow()
    report = full_check(g)
    np.savez(tmp_path / "imgs.npz", x=np.random.default_rng(0).random((16, 4, 4, 4)).astype(np.float32))
    with pytest.raises(DataError, match=r"missing array 'y' .* a regression task needs one; not a flow: .*"
                                        r"2 Outputs \(z0, z1\)"):
        load_data(str(tmp_path / "imgs.npz"), g, report, task=infer_task(g, report))
    synthetic = load_data("synthetic", g, report, task=infer_task(g, report))
    assert "regression targets 8x2x2 of 'z0' (not a flow: the loss reads one Output)" in synthetic.describe()
