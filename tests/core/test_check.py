"""The check pass: every kind of diagnostic on a small graph, shapes, groups, report JSON.

Uses tiny specs in their own Registry (same conventions as the catalog) so the
checker is tested on its own; tests/test_examples.py covers the real catalog.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from functools import partial
from typing import Any

from scaling import NOT_QUADRATIC, growth

from revstudio.core.graph import Edge, Graph, PortRef
from revstudio.core.params import Bool, Choice, GroupRef, Int, IntOrList, Shape, Str
from revstudio.core.spec import InferContext, NodeSpec, Registry, ShapeError, numbered


def _group_ports(kind: str, params: Mapping[str, Any], groups: Mapping[str, Graph]) -> list[str]:
    body = groups.get(params.get("group", ""))
    if body is None:
        return []
    return [str(n.params.get("port", "in" if kind == "GroupInput" else "out"))
            for n in body.nodes.values() if n.type == kind]


def _dense(ctx: InferContext) -> dict:
    ctx.input("in")
    return {"out": (ctx.params["out_features"],)}


def _dense_params(ctx: InferContext) -> int:
    return math.prod(ctx.input("in")) * ctx.params["out_features"] + ctx.params["out_features"]


def _split(ctx: InferContext) -> dict:
    shape = ctx.input("in")
    sections = ctx.params["sections"]
    if isinstance(sections, int):
        if shape[0] % sections:
            raise ShapeError(f"{shape[0]} channels do not split into {sections} equal parts", "in")
        sizes = [shape[0] // sections] * sections
    else:
        sizes = list(sections)
        if sum(sizes) != shape[0]:
            raise ShapeError(f"sections {sizes} add up to {sum(sizes)}, not {shape[0]} channels", "in")
    return {f"out{i}": (s, *shape[1:]) for i, s in enumerate(sizes)}


def _merge(ctx: InferContext) -> dict:
    first = ctx.input("in0")
    for i in range(1, ctx.params["inputs"]):
        other = ctx.input(f"in{i}")
        if other != first:
            raise ShapeError(f"in{i} is {other} but in0 is {first}; add needs equal shapes", f"in{i}")
    return {"out": first}


def _group(ctx: InferContext) -> dict:
    assert ctx.infer_group is not None
    return dict(ctx.infer_group(ctx.params["group"], dict(ctx.inputs)).outputs)


def _group_params(ctx: InferContext) -> int:
    assert ctx.infer_group is not None
    return ctx.infer_group(ctx.params["group"], dict(ctx.inputs)).parameters


def _n_sections(params: Mapping[str, Any]) -> int:
    s = params["sections"]
    return s if isinstance(s, int) else len(s)


def make_registry() -> Registry:
    reg = Registry()
    reg.register(NodeSpec("Input", "I/O", "", {"shape": Shape(default=(4,))}, [], ["out"],
                          lambda c: {"out": tuple(c.params["shape"])}))
    reg.register(NodeSpec("Output", "I/O", "", {"name": Str(default="y")}, ["in"], [], lambda c: {}))
    reg.register(NodeSpec("Dense", "Layers", "", {"out_features": Int(default=4, min=1)}, ["in"], ["out"],
                          _dense, count_params=_dense_params, legacy_ids=("Dense0",)))
    reg.register(NodeSpec("Split", "Structure", "", {"sections": IntOrList(default=2)}, ["in"],
                          lambda p, g: numbered("out", _n_sections(p)), _split))
    reg.register(NodeSpec("Merge", "Structure", "", {"inputs": Int(default=2, min=2, max=8),
                                                     "mode": Choice(default="add", options=("add", "sub"))},
                          lambda p, g: numbered("in", p["inputs"]), ["out"], _merge))
    reg.register(NodeSpec("Group", "Groups", "", {"group": GroupRef()},
                          lambda p, g: _group_ports("GroupInput", p, g),
                          lambda p, g: _group_ports("GroupOutput", p, g), _group, count_params=_group_params))
    reg.register(NodeSpec("GroupInput", "Groups", "", {"port": Str(default="in")}, [], ["out"], lambda c: {}))
    reg.register(NodeSpec("GroupOutput", "Groups", "", {"port": Str(default="out")}, ["in"], [], lambda c: {}))
    reg.register(NodeSpec("Shrink", "Layers", "", {}, ["in"], ["out"],
                          lambda c: {"out": tuple(d - 2 for d in c.input("in"))}))
    reg.register(NodeSpec("Broken", "Layers", "", {}, ["in"], ["out"], lambda c: 1 / 0))
    return reg


def build(nodes: list[tuple], edges: list[tuple[str, str]], name: str = "t") -> Graph:
    """nodes: (id, type, params); edges: ("a.out", "b.in")."""
    g = Graph(name)
    for i, (nid, typ, *rest) in enumerate(nodes):
        g.add_node(typ, nid, rest[0] if rest else {}, (i * 100.0, 0.0))
    for src, dst in edges:
        g.connect(src, dst)
    return g

import json  # noqa: E402

import pytest  # noqa: E402

from revstudio.core.check import Report, check  # noqa: E402

REG = make_registry()


def run(g: Graph) -> Report:
    return check(g, registry=REG)


def only(report: Report, severity: str = "error") -> list:
    return [d for d in report.diagnostics if d.severity == severity]


def chain() -> Graph:
    return build(
        [("x", "Input", {"shape": [8, 5]}), ("s", "Split"), ("m", "Merge"), ("d", "Dense"), ("y", "Output")],
        [("x.out", "s.in"), ("s.out0", "m.in0"), ("s.out1", "m.in1"), ("m.out", "d.in"), ("d.out", "y.in")],
    )


def test_clean_graph_shapes_parameters_and_order() -> None:
    r = run(chain())
    assert r.valid and r.diagnostics == []
    assert r.shape("s.out1") == (4, 5)
    assert r.shape("d.in") == (4, 5)
    assert r.shape("d.out") == (4,)
    assert r.nodes["d"].parameters == 4 * 5 * 4 + 4
    assert r.parameters == 84
    assert r.order == ["x", "s", "m", "d", "y"]
    assert r.nodes["d"].ok and r.nodes["d"].type == "Dense"


def test_legacy_type_id_resolves_to_current_type() -> None:
    g = build([("x", "Input"), ("d", "Dense0"), ("y", "Output")], [("x.out", "d.in"), ("d.out", "y.in")])
    r = run(g)
    assert r.valid and r.nodes["d"].type == "Dense"


def test_report_json_schema() -> None:
    data = json.loads(json.dumps(run(chain()).to_json()))
    assert set(data) == {"valid", "diagnostics", "nodes", "parameters"}
    assert data["nodes"]["s"] == {"type": "Split", "outputs": {"out0": [4, 5], "out1": [4, 5]}, "parameters": 0}
    assert data["parameters"] == 84 and data["valid"] is True


def test_json_says_null_where_a_nodes_shapes_are_unknown() -> None:
    # the text table's "?" and "-": not an Output's {} and not a claim of 0 parameters
    g = build([("d", "Dense"), ("e", "Dense"), ("y", "Output"), ("x", "Input")], [("d.out", "e.in"),
                                                                                  ("e.out", "y.in")])
    data = json.loads(json.dumps(run(g).to_json()))
    assert data["nodes"]["d"] == {"type": "Dense", "outputs": None, "parameters": None}
    assert data["nodes"]["e"] == {"type": "Dense", "outputs": None, "parameters": None}
    assert data["nodes"]["x"]["parameters"] == 0 and data["parameters"] == 0


def test_regions_and_estimate_appear_in_json_when_filled() -> None:
    class Obj:
        def __init__(self, v: dict) -> None:
            self.v = v

        def to_json(self) -> dict:
            return self.v

    r = run(chain())
    r.regions = [Obj({"id": "r0", "nodes": ["s", "m"]})]
    r.estimate = Obj({"total": 3})
    data = r.to_json()
    assert data["regions"] == [{"id": "r0", "nodes": ["s", "m"]}] and data["estimate"] == {"total": 3}
    r.regions = []
    assert r.to_json()["regions"] == []  # a full check that found no region says so


def test_cycle_names_its_nodes_and_downstream_stays_quiet() -> None:
    g = build([("x", "Input"), ("a", "Merge"), ("b", "Dense"), ("c", "Dense"), ("z", "Dense"), ("y", "Output"),
               ("x2", "Input"), ("ok", "Dense"), ("y2", "Output")],
              [("x.out", "a.in0"), ("a.out", "b.in"), ("b.out", "c.in"), ("c.out", "a.in1"),
               ("c.out", "z.in"), ("z.out", "y.in"), ("x2.out", "ok.in"), ("ok.out", "y2.in")])
    r = run(g)
    errs = only(r)
    assert {d.node for d in errs} == {"a", "b", "c"}
    assert all("a -> b -> c -> a" in d.message and "remove one" in d.message for d in errs)
    assert "z" in r.order and "a" not in r.order
    assert r.shape("z.out") is None and r.shape("ok.out") == (4,)


def test_self_loop_is_a_cycle() -> None:
    g = build([("x", "Input"), ("m", "Merge")], [("x.out", "m.in0"), ("m.out", "m.in1")])
    errs = only(run(g))
    assert [d.node for d in errs] == ["m"] and "m -> m" in errs[0].message


def test_unconnected_input_names_port() -> None:
    g = build([("x", "Input"), ("m", "Merge"), ("y", "Output")], [("x.out", "m.in0"), ("m.out", "y.in")])
    (err,) = only(run(g))
    assert (err.node, err.port) == ("m", "in1")
    assert "not connected" in err.message and "connect" in err.message


def test_dense_on_unknown_shape_is_reported_once() -> None:
    g = build([("d", "Dense"), ("e", "Dense"), ("y", "Output"), ("x", "Input")], [("d.out", "e.in"),
                                                                                  ("e.out", "y.in")])
    r = run(g)
    assert [(d.node, d.port) for d in only(r)] == [("d", "in")]
    assert r.shape("e.out") is None


def test_two_edges_into_one_input() -> None:
    g = build([("x", "Input"), ("x2", "Input"), ("d", "Dense"), ("y", "Output")],
              [("x.out", "d.in"), ("x2.out", "d.in"), ("d.out", "y.in")])
    (err,) = only(run(g))
    assert (err.node, err.port) == ("d", "in")
    assert "2 edges" in err.message and "x.out" in err.message and "x2.out" in err.message


def test_edges_to_ports_that_do_not_exist() -> None:
    g = build([("x", "Input"), ("d", "Dense"), ("y", "Output")],
              [("x.out", "d.in"), ("x.out", "d.bogus"), ("d.nope", "y.in")])
    r = run(g)
    by_port = {(d.node, d.port): d.message for d in only(r)}
    assert set(by_port) == {("d", "bogus"), ("d", "nope")}
    assert "no input port 'bogus'" in by_port[("d", "bogus")] and "'in'" in by_port[("d", "bogus")]
    assert "no output port 'nope'" in by_port[("d", "nope")]
    assert r.shape("d.out") == (4,)  # the good edge still counts


def test_unknown_type_suggests_close_names() -> None:
    g = build([("x", "Input"), ("d", "dense"), ("y", "Output")], [("x.out", "d.in"), ("d.out", "y.in")])
    (err,) = only(run(g))
    assert err.node == "d" and "unknown node type 'dense'" in err.message and "Dense" in err.message


def test_unknown_param_and_bad_values() -> None:
    g = build([("x", "Input", {"shape": [-3]}), ("d", "Dense", {"out_features": "big", "colour": 1}),
               ("e", "Dense", {"out_features": 0})], [])
    msgs = {(d.node, d.message.split(":")[0]) for d in only(run(g))}
    assert ("x", "parameter 'shape'") in msgs
    assert ("d", "parameter 'out_features'") in msgs and ("d", "parameter 'colour'") in msgs
    assert ("e", "parameter 'out_features'") in msgs
    texts = " ".join(d.message for d in only(run(g)))
    assert "Dense has no parameter 'colour'" in texts and "remove it" in texts and "too small" in texts and "expected an integer" in texts


def test_shape_mismatch_names_port() -> None:
    g = build([("x", "Input", {"shape": [6]}), ("s", "Split", {"sections": [2, 4]}), ("m", "Merge"),
               ("y", "Output")], [("x.out", "s.in"), ("s.out0", "m.in0"), ("s.out1", "m.in1"), ("m.out", "y.in")])
    r = run(g)
    (err,) = only(r)
    assert (err.node, err.port) == ("m", "in1") and "equal shapes" in err.message
    assert r.shape("s.out1") == (4,)


def test_split_sizes_that_do_not_add_up() -> None:
    g = build([("x", "Input", {"shape": [6]}), ("s", "Split", {"sections": [2, 3]})], [("x.out", "s.in")])
    (err,) = only(run(g))
    assert err.node == "s" and "add up to 5, not 6" in err.message


def test_one_bad_node_does_not_hide_unrelated_shapes() -> None:
    g = build([("x", "Input", {"shape": [6]}), ("bad", "Split", {"sections": 4}), ("after", "Dense"),
               ("good", "Dense", {"out_features": 3}), ("g2", "Dense"), ("y", "Output"), ("y2", "Output")],
              [("x.out", "bad.in"), ("bad.out0", "after.in"), ("after.out", "y.in"),
               ("x.out", "good.in"), ("good.out", "g2.in"), ("g2.out", "y2.in")])
    r = run(g)
    assert [d.node for d in only(r)] == ["bad"]
    assert only(r, "warning") == []  # no noise about bad's unused outputs
    assert r.shape("after.out") is None and not r.nodes["after"].ok
    assert r.shape("good.out") == (3,) and r.shape("g2.out") == (4,)
    assert r.parameters == (6 * 3 + 3) + (3 * 4 + 4)


def test_spec_bug_becomes_a_diagnostic() -> None:
    g = build([("x", "Input"), ("b", "Broken"), ("y", "Output")], [("x.out", "b.in"), ("b.out", "y.in")])
    (err,) = only(run(g))
    assert err.node == "b" and "ZeroDivisionError" in err.message


def test_missing_input_and_output_are_warnings() -> None:
    r = run(build([("d", "Dense")], []))
    warns = [d.message for d in only(r, "warning")]
    assert any("no Input node" in w for w in warns) and any("no Output node" in w for w in warns)
    empty = run(Graph())  # a new project: a blank page; one warning says what it lacks, not two
    assert empty.valid and [d.message for d in empty.warnings] == [
        "the graph is empty: add an Input and an Output node"]


def test_unused_outputs_warn() -> None:
    g = build([("x", "Input", {"shape": [4]}), ("s", "Split"), ("d", "Dense"), ("y", "Output"), ("lost", "Dense")],
              [("x.out", "s.in"), ("s.out0", "d.in"), ("d.out", "y.in"), ("x.out", "lost.in")])
    r = run(g)
    assert r.valid
    warns = {(d.node, d.port): d.message for d in r.warnings}
    assert set(warns) == {("s", "out1"), ("lost", "out")}
    assert "thrown away" in warns[("s", "out1")] and "nothing reads" in warns[("lost", "out")]


# ---- groups ---------------------------------------------------------------

def body(*inner: tuple, extra_edges: tuple = ()) -> Graph:
    nodes = [("gi", "GroupInput"), *inner, ("go", "GroupOutput")]
    first, last = inner[0][0], inner[-1][0]
    return build(nodes, [("gi.out", f"{first}.in"), *[(f"{a[0]}.out", f"{b[0]}.in") for a, b in
                                                      zip(inner, inner[1:])], (f"{last}.out", "go.in"),
                         *extra_edges])


def with_group(name: str, body_graph: Graph, *, times: int = 1) -> Graph:
    nodes = [("x", "Input", {"shape": [3]})]
    edges = []
    prev = "x.out"
    for i in range(times):
        nodes.append((f"g{i}", "Group", {"group": name}))
        edges.append((prev, f"g{i}.in"))
        prev = f"g{i}.out"
    nodes.append(("y", "Output"))
    edges.append((prev, "y.in"))
    g = build(nodes, [])
    g.groups[name] = body_graph
    for s, d in edges:
        g.connect(s, d)
    return g


def test_group_shapes_and_parameters_come_from_the_body() -> None:
    g = with_group("f", body(("a", "Dense", {"out_features": 5}), ("b", "Dense", {"out_features": 3})), times=2)
    r = run(g)
    assert r.valid, r.diagnostics
    assert r.shape("g0.out") == (3,) and r.shape("g1.out") == (3,)
    per = (3 * 5 + 5) + (5 * 3 + 3)
    assert r.nodes["g0"].parameters == per and r.parameters == 2 * per
    assert r.groups["f"].shape("a.out") == (5,)


def test_group_bodies_are_memoised_on_input_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    import revstudio.core.shapes as shapes

    calls = []
    real = shapes.analyse_graph

    def counting(graph, inferer, provided=None):  # type: ignore[no-untyped-def]
        calls.append(provided)
        return real(graph, inferer, provided)

    monkeypatch.setattr(shapes, "analyse_graph", counting)
    g = with_group("f", body(("a", "Dense", {"out_features": 3})), times=20)
    r = run(g)
    assert r.valid and r.parameters == 20 * 12
    assert calls.count({"in": (3,)}) == 1  # one body analysis for 20 nodes x (infer + count_params)


def test_unknown_group_name_suggests() -> None:
    g = with_group("f", body(("a", "Dense")))
    g.nodes["g0"].params["group"] = "F"
    errs = only(run(g))
    assert errs[0].node == "g0" and "there is no group 'F'" in errs[0].message and "did you mean f" in errs[0].message
    assert len(errs) == 1  # the Group node's edges are not reported on top


def test_body_error_is_reported_on_the_group_node_naming_the_inner_node() -> None:
    inner = build([("gi", "GroupInput"), ("a", "Dense"), ("s", "Split", {"sections": 3}), ("go", "GroupOutput")],
                  [("gi.out", "a.in"), ("a.out", "s.in"), ("s.out0", "go.in")])
    g = with_group("f", inner)
    r = run(g)
    (err,) = only(r)
    assert err.node == "g0"
    assert "group 'f'" in err.message and "'s'" in err.message and "3 equal parts" in err.message
    assert r.groups["f"].for_node("s")


def test_recursive_groups_are_named() -> None:
    g = with_group("a", body(("inner", "Group", {"group": "b"})))
    b = body(("back", "Group", {"group": "a"}))
    g.groups["b"] = b
    r = run(g)
    (err,) = only(r)
    assert err.node == "g0" and "contains itself" in err.message and "a -> b -> a" in err.message


def test_group_that_uses_itself_directly() -> None:
    g = with_group("a", body(("me", "Group", {"group": "a"})))
    (err,) = only(run(g))
    assert "a -> a" in err.message


def test_group_io_nodes_outside_a_body_are_errors() -> None:
    g = build([("gi", "GroupInput"), ("d", "Dense"), ("go", "GroupOutput")], [("gi.out", "d.in"),
                                                                               ("d.out", "go.in")])
    errs = only(run(g))
    assert {d.node for d in errs} == {"gi", "go"} and all("inside a group" in d.message for d in errs)


def test_dangling_edge_added_behind_the_graphs_back() -> None:
    g = chain()
    g.edges.append(Edge(PortRef("d", "out"), PortRef("ghost", "in")))
    errs = only(run(g))
    assert len(errs) == 1 and errs[0].node == "d" and "'ghost'" in errs[0].message


def test_empty_shape_output_is_an_error() -> None:
    g = build([("x", "Input", {"shape": [2, 5]}), ("s", "Shrink"), ("y", "Output")],
              [("x.out", "s.in"), ("s.out", "y.in")])
    (err,) = only(run(g))
    assert (err.node, err.port) == ("s", "out") and "0x3, which is empty" in err.message


def dense_chain(n: int) -> Graph:
    nodes = [("x", "Input")] + [(f"d{i}", "Dense") for i in range(n)] + [("y", "Output")]
    edges = [("x.out", "d0.in")] + [(f"d{i}.out", f"d{i + 1}.in") for i in range(n - 1)] + [(f"d{n - 1}.out",
                                                                                              "y.in")]
    return build(nodes, edges)


def test_large_chain_is_linear_time() -> None:
    r = run(dense_chain(3000))
    assert r.valid and len(r.order) == 3002
    # 4x the nodes must cost about 4x, not 16x (absolute speed: benchmarks/bench_check.py)
    ratio = growth(lambda n: partial(run, dense_chain(n)), 500)
    assert ratio < NOT_QUADRATIC, f"checking 4x the nodes took {ratio:.1f}x as long"


def test_many_nodes_of_a_misspelt_type_ask_for_suggestions_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import difflib

    from revstudio.core import validate

    calls: list[str] = []
    real = difflib.get_close_matches

    def counting(word: str, *args: Any, **kwargs: Any) -> list[str]:
        calls.append(word)
        return real(word, *args, **kwargs)

    validate._suggest_cached.cache_clear()
    monkeypatch.setattr(difflib, "get_close_matches", counting)
    g = Graph("typos")
    for i in range(5000):
        g.add_node("Dens", f"n{i}")
    r = run(g)
    assert len(r.errors) == 5000 and "did you mean Dense" in r.errors[-1].message
    assert calls == ["dens"]  # suggestions are cached per name, not computed per node


def cycle(n: int) -> Graph:
    g = build([("x", "Input"), ("m", "Merge")], [("x.out", "m.in0")])
    prev = "m"
    for i in range(n):
        g.add_node("Dense", f"d{i}")
        g.add_edge(Edge(PortRef(prev, "out"), PortRef(f"d{i}", "in")))
        prev = f"d{i}"
    g.add_edge(Edge(PortRef(prev, "out"), PortRef("m", "in1")))
    return g


def test_a_huge_cycle_is_reported_briefly_and_in_linear_time() -> None:
    n = 5000
    r = run(cycle(n))
    assert len(r.errors) == n + 1
    assert all(len(d.message) < 300 for d in r.errors)  # the path is shortened, not repeated 5,000 times
    assert "m -> d0 -> d1" in r.errors[0].message and "more) -> d4999 -> m" in r.errors[0].message
    ratio = growth(lambda n: partial(run, cycle(n)), 500)
    assert ratio < NOT_QUADRATIC, f"a 4x longer cycle took {ratio:.1f}x as long to report"


def test_unused_group_bodies_get_structural_diagnostics_for_their_tab() -> None:
    g = chain()
    g.groups["spare"] = body(("a", "Dense", {"out_features": -2}), ("b", "Dense"))
    r = run(g)
    assert r.valid  # an unused group does not make the project invalid
    spare = r.groups["spare"]
    assert [(d.node, d.message.split(":")[0]) for d in spare.errors] == [("a", "parameter 'out_features'")]
    assert spare.shape("b.out") is None  # no use, so no input shape: quiet, no extra errors


def test_broken_nodes_still_show_their_input_shapes() -> None:
    g = build([("x", "Input", {"shape": [6]}), ("d", "Dense", {"out_features": -1}), ("u", "Mystery")],
              [("x.out", "d.in"), ("x.out", "u.whatever")])
    r = run(g)
    assert not r.nodes["d"].ok and r.nodes["d"].inputs == {"in": (6,)}
    assert r.nodes["u"].inputs == {"whatever": (6,)} and r.shape("u.whatever") == (6,)


def test_a_parameter_a_newer_plugin_dropped_says_the_file_was_saved_with_another_version() -> None:
    """It read like a typo in the file ("remove it or rename it") when the plugin had changed."""
    from revstudio.core.plugins import Provider

    reg = make_registry()
    reg.register(NodeSpec("PScale", "Plugin", "", {"bias": Bool(default=True)}, ["in"], ["out"],
                          lambda c: {"out": c.input("in")}),
                 provider=Provider("scale", "rsp_x.nodes:SPECS", "rsp-x", "1.1.0"))
    g = build([("x", "Input", {}), ("s", "PScale", {"momentum": 0.5}), ("y", "Output", {})],
              [("x.out", "s.in"), ("s.out", "y.in")])
    g.plugins = {"PScale": {"distribution": "rsp-x", "version": "1.0.0"}}
    [message] = [d.message for d in check(g, reg).diagnostics if d.severity == "error"]
    assert message.startswith("parameter 'momentum': PScale has no parameter 'momentum' (it has: bias)")
    assert "the file was saved with rsp-x 1.0.0; rsp-x 1.1.0 is installed" in message
    g.plugins = {"PScale": {"distribution": "rsp-x", "version": "1.1.0"}}
    [message] = [d.message for d in check(g, reg).diagnostics if d.severity == "error"]
    assert "saved with" not in message


def test_a_diagnostic_about_several_nodes_is_for_each_of_them() -> None:
    """One plugin-swap warning per type sits on its first node; the others it names must still find
    it (their canvas outline, their inspector note): for_node matched ``node`` alone."""
    from revstudio.core.check import Report
    from revstudio.core.diagnostics import warning

    merged = warning("g", "swapped; 3 nodes use it", also=("g", "r", "c"))
    report = Report(diagnostics=[merged, warning("x", "other")])
    assert [report.for_node(n) for n in ("g", "r", "c", "x")] == [[merged], [merged], [merged], [report.diagnostics[1]]]
    assert merged.nodes == ("g", "r", "c") and merged.to_json()["nodes"] == ["g", "r", "c"]
    assert warning(None, "project").to_json()["nodes"] == []


def test_a_printed_report_is_a_summary_not_the_dataclass() -> None:
    """``print(rs.check(g))`` in a new user's script printed the repr of every node's facts, pages long."""
    g = Graph()
    g.add_node("Input", "x", {"shape": [4, 8, 8]})
    g.add_node("Conv", "c", {"out_channels": 4, "channels": 3})
    g.add_node("Output", "y")
    g.connect("x.out", "c.in")
    g.connect("c.out", "y.in")
    text = str(check(g))
    assert text.splitlines()[0] == "3 nodes, 0 parameters, 1 error, 0 warnings: NOT valid"
    assert "  error c: parameter 'channels': Conv has no parameter 'channels'" in text
    assert "Report(" not in text and len(text.splitlines()) == 2
