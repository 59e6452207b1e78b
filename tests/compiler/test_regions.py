"""Reversibility analysis: maximal regions for example-like graphs, and near-miss explanations."""
from __future__ import annotations

import json

import pytest
from compiler_graphs import (
    birnn_first,
    conv_body,
    coupling_repeat,
    nested_quarter,
    nested_repeat,
    two_branch,
    two_stream_group,
    wired_revnet,
)

from revstudio.compiler.plan import lower
from revstudio.compiler.regions import analyze
from revstudio.core.check import check
from revstudio.core.graph import Graph


def _analyze(g: Graph):
    report = check(g)
    assert report.valid, [str(d) for d in report.diagnostics]
    return analyze(g, report)


def test_wired_revnet_is_one_region_whatever_its_depth() -> None:
    result = _analyze(wired_revnet(3))
    assert len(result.regions) == 1
    region = result.regions[0]
    assert region.inputs == ["x.out"] and region.outputs == ["b2c.out"]
    assert {"b0f", "b0fa", "b0g", "b2m2"} <= set(region.nodes)  # F nodes belong to the region
    assert set(region.couplings) == {f"b{i}m{j}" for i in range(3) for j in (1, 2)}
    c = region.couplings["b0m1"]
    assert (c.a, c.b, c.body) == ("b0s.out0", ["b0s.out1"], ["b0f", "b0fa"])
    c2 = region.couplings["b0m2"]
    assert (c2.a, c2.b, c2.body) == ("b0s.out1", ["b0m1.out"], ["b0g"])
    assert result.near_misses == []
    assert result.region_of("b1g") is region and result.region_of("x") is None


def test_region_json_is_what_check_prints() -> None:
    region = _analyze(wired_revnet(1)).regions[0]
    data = json.loads(json.dumps(region.to_json()))
    assert set(data) == {"id", "nodes", "inputs", "outputs"}
    assert data["id"] == "region-b0s" and data["inputs"] == ["x.out"]


def test_additive_coupling_in_repeat_is_a_region() -> None:
    result = _analyze(coupling_repeat(4, head=True))
    assert [r.nodes for r in result.regions] == [["rep"]]
    assert result.regions[0].outputs == ["rep.out"]
    assert result.region_of("fc") is None


@pytest.mark.parametrize("kind", ["Repeat", "Group"])
def test_a_repeat_or_group_nested_in_a_body_is_as_invertible_as_its_body(kind: str) -> None:
    # The body of "stack" runs a Repeat (or Group) of the coupling block: a step like the block
    # itself, in the check's analysis and in the compiler's plan of the body alike.
    g = nested_repeat(kind=kind)
    result = _analyze(g)
    assert [r.nodes for r in result.regions] == [["rep"]]
    assert result.near_misses == []
    plan = lower(g, check(g))
    stack = next(p for key, p in plan.groups.items() if key.startswith("stack|"))
    assert stack.invertible and [type(op).__name__ for op in stack.ops].count("RegionOp") == 1


def test_nested_split_concat_around_a_quarter_coupling_is_one_region() -> None:
    result = _analyze(nested_quarter())
    assert len(result.regions) == 1
    assert set(result.regions[0].nodes) == {"s1", "qs", "qf", "qfa", "qm1", "qg", "qm2", "qc", "c1"}


def test_inplace_activation_before_a_region_stays_outside() -> None:
    result = _analyze(nested_quarter(inplace_before=True))
    assert result.regions[0].inputs == ["relu.out"]
    assert result.region_of("relu") is None


def test_multi_input_multi_output_group_over_split_views() -> None:
    result = _analyze(two_stream_group())
    assert [r.nodes for r in result.regions] == [["s", "grp", "c"]]


def test_graphs_without_invertible_parts_have_no_regions() -> None:
    for g in (birnn_first(), two_branch("stack"), two_branch("concat", zero_branch=True)):
        result = _analyze(g)
        assert result.regions == [] and result.near_misses == []


def _merge_reading_its_own_stream() -> Graph:
    g = Graph("miss")
    g.add_node("Input", "x", {"shape": [4, 4, 4]})
    g.add_node("Split", "s", {"sections": 2})
    g.add_node("Conv", "conv2", {"out_channels": 2, "kernel_size": 3, "padding": "same"})
    g.add_node("Merge", "m3", {"mode": "add"})
    g.add_node("Concat", "c", {})
    g.add_node("Output", "y")
    g.connect("x.out", "s.in")
    g.connect("s.out0", "conv2.in")
    g.connect("s.out0", "m3.in0")
    g.connect("conv2.out", "m3.in1")
    g.connect("m3.out", "c.in0")
    g.connect("s.out1", "c.in1")
    g.connect("c.out", "y.in")
    return g


def test_near_miss_names_the_operand_and_the_consumed_value() -> None:
    result = _analyze(_merge_reading_its_own_stream())
    assert result.regions == []
    (miss,) = result.near_misses
    assert miss.severity == "warning" and miss.node == "m3"
    assert "merge m3 is not a coupling: operand conv2 reads s.out0 at conv2.in, which this merge consumes" \
        in miss.message


def test_a_wrong_port_into_f_says_which_wire_to_change() -> None:
    """The beginner's slip of wiring F from the same Split part the merge adds to: the warning
    names the wire that makes the coupling (the Split's other part into F's first layer)."""
    (miss,) = _analyze(_merge_reading_its_own_stream()).near_misses
    assert miss.message.endswith("(y1 = x1 + F(x2)): wire s.out1 into conv2.in instead"), miss.message
    g = _merge_reading_its_own_stream()
    (wrong,) = g.edges_into("conv2", "in")
    g.remove_edge(wrong)
    g.connect("s.out1", "conv2.in")
    fixed = _analyze(g)
    assert fixed.near_misses == [] and len(fixed.regions) == 1


def test_near_miss_for_a_stream_consumed_before_the_merge() -> None:
    g = Graph("late")
    g.add_node("Input", "x", {"shape": [4, 4, 4]})
    g.add_node("Split", "s", {"sections": 2})
    g.add_node("Concat", "c", {})
    g.add_node("Conv", "conv", {"out_channels": 4, "kernel_size": 1})
    g.add_node("Merge", "m", {"mode": "sub"})
    g.add_node("Output", "y")
    g.connect("x.out", "s.in")
    g.connect("s.out0", "c.in0")
    g.connect("s.out1", "c.in1")
    g.connect("s.out1", "conv.in")
    g.connect("c.out", "m.in0")
    g.connect("conv.out", "m.in1")
    g.connect("m.out", "y.in")
    result = _analyze(g)
    (miss,) = result.near_misses
    assert miss.node == "m" and "s.out1" in miss.message and "c consumes before this merge" in miss.message


def test_near_miss_for_a_merge_of_three() -> None:
    g = wired_revnet(1)
    g.add_node("Input", "z", {"shape": [2, 4, 4]})
    g.set_param("b0m1", "inputs", 3)
    g.connect("z.out", "b0m1.in2")
    result = _analyze(g)
    assert any(d.node == "b0m1" and "3 inputs" in d.message for d in result.near_misses)


def test_near_miss_for_a_repeat_of_a_non_invertible_body() -> None:
    g = Graph("plain_repeat")
    g.set_group("body", conv_body(4))
    g.add_node("Input", "x", {"shape": [4, 4, 4]})
    g.add_node("Repeat", "r", {"group": "body", "times": 2})
    g.add_node("Output", "y")
    g.connect("x.out", "r.in")
    g.connect("r.out", "y.in")
    result = _analyze(g)
    assert result.regions == []
    (miss,) = result.near_misses
    assert miss.node == "r" and "conv (Conv) is not invertible" in miss.message


@pytest.mark.parametrize(("node", "names"), [("body", "group body is"), ("g1", "group g1 (group 'body') is")])
def test_near_miss_for_a_group_names_the_node_and_its_group_once(node: str, names: str) -> None:
    g = Graph("plain_group")
    g.set_group("body", conv_body(4))
    g.add_node("Input", "x", {"shape": [4, 4, 4]})
    g.add_node("Group", node, {"group": "body"})
    g.add_node("Output", "y")
    g.connect("x.out", f"{node}.in")
    g.connect(f"{node}.out", "y.in")
    (miss,) = _analyze(g).near_misses
    assert miss.message.startswith(f"{names} not reversible because its node conv (Conv) is not invertible;")
    assert miss.message.count("body") == 1


def test_ordinary_node_between_steps_splits_the_region() -> None:
    # F's result is also read elsewhere, so F is not private to the merge; the
    # analysis must not claim a region that would have to run around that node.
    g = wired_revnet(1)
    g.add_node("Output", "peek")
    g.connect("b0fa.out", "peek.in")
    result = _analyze(g)
    for region in result.regions:
        assert "b0fa" not in region.nodes
    (miss,) = result.near_misses
    assert miss.node == "b0m1" and "cannot recompute b0fa: its result is also read by peek" in miss.message
    order = result.order
    assert order.index("b0fa") < order.index("b0m1")


def test_analysis_grows_linearly_with_the_graph() -> None:
    # The editor reruns the analysis after every edit; absolute times live in
    # benchmarks/bench_check.py, here only the growth between two sizes is checked.
    from scaling import NOT_QUADRATIC, growth

    from revstudio.core.generate import large_graph, revnet_chain

    def lanes(n: int):
        g = large_graph(n)
        report = check(g)
        return lambda: analyze(g, report)

    def chain(n: int):
        g = revnet_chain(n, channels=4, size=4)
        report = check(g)
        return lambda: analyze(g, report)

    assert analyze(large_graph(500), check(large_graph(500))).regions
    assert growth(lanes, 500) < NOT_QUADRATIC
    assert growth(chain, 40) < NOT_QUADRATIC


def test_a_residual_skip_says_how_it_could_become_a_coupling() -> None:
    """x + F(x) from a one-output node has no other part to wire: the warning says what F would read."""
    g = Graph("residual")
    g.add_node("Input", "x", {"shape": [4, 4, 4]})
    g.add_node("Conv", "stem", {"out_channels": 4, "kernel_size": 3, "padding": "same"})
    g.add_node("Conv", "f", {"out_channels": 4, "kernel_size": 3, "padding": "same"})
    g.add_node("Merge", "skip", {"mode": "add"})
    g.add_node("Output", "y")
    for src, dst in (("x.out", "stem.in"), ("stem.out", "f.in"), ("stem.out", "skip.in0"), ("f.out", "skip.in1"),
                     ("skip.out", "y.in")):
        g.connect(src, dst)
    (miss,) = _analyze(g).near_misses
    assert miss.message == ("merge skip is not a coupling: operand f reads stem.out at f.in, which this merge "
                            "consumes, so backward could not rebuild stem.out from the merge's result; a coupling "
                            "adds F of the other part (y1 = x1 + F(x2)); to make it one, feed F from a value this "
                            "merge does not read (a Split's other part)"), miss.message
