"""The check pass on the real node catalog: coupling bodies, inner errors, merges, recursion.

tests/core/test_check.py covers each diagnostic with tiny specs of its own;
these make sure the same promises hold with the catalog's specs and messages.
"""
from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from revstudio.core.check import check
from revstudio.core.graph import Edge, Graph, PortRef
from revstudio.core.project import load


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


def _wrapped(g: Graph, name: str, inner: str, *, with_input: bool = True) -> None:
    """Group ``name``: GroupInput -> Group(inner) -> GroupOutput (no GroupInput: ``with_input``)."""
    body = Graph(name)
    if with_input:
        body.add_node("GroupInput", "i")
    body.add_node("Group", "n", {"group": inner})
    body.add_node("GroupOutput", "o")
    if with_input:
        body.connect("i.out", "n.in")
    body.connect("n.out", "o.in")
    g.groups[name] = body


def test_an_error_deep_in_nested_groups_gives_the_advice_once() -> None:
    g = catalog_graph()
    g.groups["f"].nodes["conv"].params["out_channels"] = 0
    _wrapped(g, "w1", "f")
    _wrapped(g, "w2", "w1")
    g.nodes["cp"].params["f"] = "w2"
    (err,) = check(g).errors
    assert err.node == "cp" and "'w2'" in err.message and "'w1'" in err.message and "out_channels" in err.message
    assert err.message.count("open the group to fix it") == 1 and err.message.endswith("open the group to fix it")


def test_a_body_without_inputs_is_said_so() -> None:
    g = catalog_graph()
    _wrapped(g, "w", "f", with_input=False)
    g.add_node("Group", "top", {"group": "w"})
    g.add_node("Output", "z")
    g.connect("top.out", "z.in")
    messages = [d.message for d in check(g).errors]
    assert any("group 'w' does not work without inputs (it has no GroupInput)" in m for m in messages), messages


def test_errors_in_a_group_no_node_uses_are_a_warning_naming_group_and_node() -> None:
    g = catalog_graph()
    spare = Graph("spare")
    spare.add_node("GroupInput", "i")
    spare.add_node("Conv", "c", {"colour": "red"})
    spare.add_node("GroupOutput", "o")
    spare.connect("i.out", "c.in")
    spare.connect("c.out", "o.in")
    g.groups["spare"] = spare
    r = check(g)
    assert r.valid  # nothing runs the group: it stops nothing
    (w,) = r.warnings
    assert w.node is None and "group 'spare', which nothing in the project runs" in w.message
    assert "node 'c'" in w.message and "'colour'" in w.message and "delete it" in w.message
    assert [d.node for d in r.groups["spare"].errors] == ["c"]  # the group's own tab still marks the node
    spare.nodes["c"].params.clear()
    assert check(g).warnings == []
    # used only by a group nothing runs: as unused (its user's body is not inferred, so says nothing)
    spare.nodes["c"].params["colour"] = "red"
    _wrapped(g, "outer", "spare")
    (w,) = check(g).warnings
    assert "group 'spare', which nothing in the project runs" in w.message
    g.nodes["cp"].params["f"] = "outer"  # now the project runs it: an error on the node that does
    r = check(g)
    assert not r.valid and r.warnings == [] and r.errors[0].node == "cp" and "'colour'" in r.errors[0].message


# ---- mutated example projects: the check never raises ----------------------

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "resources" / "examples").glob("*.revs"))
ODD_VALUES = [-1, 0, 1, 3, 1.5, "same", "x", None, [], [1, 2], {"a": 1}, True, "f", "net", "block", 10**9]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_examples_never_break_the_check(data: st.DataObject) -> None:
    graph = load(data.draw(st.sampled_from(EXAMPLES)))
    graphs = [graph, *graph.groups.values()]
    for _ in range(data.draw(st.integers(1, 4))):
        g = data.draw(st.sampled_from(graphs))
        nid = data.draw(st.sampled_from(sorted(g.nodes)))
        node = g.nodes[nid]
        what = data.draw(st.sampled_from(["type", "param", "drop_edge", "add_edge", "delete", "group_ref"]))
        if what == "type":
            node.type = data.draw(st.sampled_from(["Nope", "conv", "Group", "Repeat", "Merge", "Split"]))
        elif what == "param":
            node.params[data.draw(st.sampled_from([*node.params, "zzz", "group", "sections"]))] = \
                data.draw(st.sampled_from(ODD_VALUES))
        elif what == "drop_edge" and g.edges:
            g.edges.pop(data.draw(st.integers(0, len(g.edges) - 1)))
        elif what == "add_edge":
            other = data.draw(st.sampled_from(sorted(g.nodes)))
            g.edges.append(Edge(PortRef(nid, data.draw(st.sampled_from(["out", "out0", "in"]))),
                                PortRef(other, data.draw(st.sampled_from(["in", "in0", "in1", "in5"])))))
        elif what == "delete":
            g.remove_node(nid)
        elif graph.groups:  # a body that refers to some group, perhaps its own
            name = data.draw(st.sampled_from(sorted(graph.groups)))
            body = graph.groups[name]
            body.add_node("Repeat", body.unique_id("rep"), {"group": data.draw(st.sampled_from(sorted(graph.groups)))})
    report = check(graph)
    json.dumps(report.to_json())
    for d in report.diagnostics:
        assert d.node is None or d.node in graph.nodes
        assert d.message and "Traceback" not in d.message
