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
