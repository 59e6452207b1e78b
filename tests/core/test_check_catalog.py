"""The check pass on the real node catalog: coupling bodies, inner errors, merges, recursion.

tests/core/test_check.py covers each diagnostic with tiny specs of its own;
these make sure the same promises hold with the catalog's specs and messages.
"""
from __future__ import annotations

from revstudio.core.check import check
from revstudio.core.graph import Graph


def catalog_graph() -> Graph:
    """x(8x8x8) -> AdditiveCoupling(f) -> Output, with f = Conv(4) -> Activation."""
    g = Graph("real")
    g.add_node("Input", "x", {"shape": [8, 8, 8]})
    g.add_node("AdditiveCoupling", "cp", {"f": "f"})
    g.add_node("Output", "y")
    f = Graph("f")
    f.add_node("GroupInput", "i")
    f.add_node("Conv", "conv", {"out_channels": 4, "kernel_size": 3})
    f.add_node("Activation", "act")
    f.add_node("GroupOutput", "o")
    for s, d in [("i.out", "conv.in"), ("conv.out", "act.in"), ("act.out", "o.in")]:
        f.connect(s, d)
    g.groups["f"] = f
    g.connect("x.out", "cp.in")
    g.connect("cp.out", "y.in")
    return g


def test_real_coupling_infers_its_body() -> None:
    r = check(catalog_graph())
    assert r.valid, [str(d) for d in r.diagnostics]
    assert r.shape("cp.out") == (8, 8, 8) and r.parameters == 4 * 4 * 9 + 4
    assert r.groups["f"].shape("conv.out") == (4, 8, 8)


def test_real_coupling_body_errors_name_the_inner_node() -> None:
    g = catalog_graph()
    g.groups["f"].nodes["act"].type = "Activaton"
    (err,) = check(g).errors
    assert err.node == "cp" and "'act'" in err.message and "Activation" in err.message


def test_real_coupling_body_with_wrong_channels() -> None:
    g = catalog_graph()
    g.groups["f"].nodes["conv"].params["out_channels"] = 6
    (err,) = check(g).errors
    assert err.node == "cp" and "f" in err.message and "6x8x8" in err.message


def test_real_merge_of_unequal_shapes_and_unconnected_linear() -> None:
    g = Graph("m")
    g.add_node("Input", "x", {"shape": [4, 8]})
    g.add_node("Conv", "c", {"out_channels": 6})
    g.add_node("Merge", "m", {"mode": "add"})
    g.add_node("Linear", "lin")
    g.add_node("Output", "y")
    for s, d in [("x.out", "c.in"), ("x.out", "m.in0"), ("c.out", "m.in1"), ("m.out", "y.in")]:
        g.connect(s, d)
    r = check(g)
    errs = {(d.node, d.port): d.message for d in r.errors}
    assert set(errs) == {("m", "in1"), ("lin", "in")}
    assert "6x8" in errs[("m", "in1")] and "4x8" in errs[("m", "in1")]
    assert r.shape("c.out") == (6, 8)


def test_real_repeat_of_a_group_that_repeats_itself() -> None:
    g = catalog_graph()
    g.groups["f"].add_node("Repeat", "again", {"group": "f"})
    g.nodes["cp"].params["f"] = "f"
    errs = check(g).errors
    assert errs and errs[0].node == "cp" and "contains itself" in errs[0].message and "f -> f" in errs[0].message
