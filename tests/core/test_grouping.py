"""Group/ungroup: one undoable step each; ungroup(group(sel)) gives the selection back."""
from __future__ import annotations

import pytest

from revstudio.core.commands import SetParam, UndoStack
from revstudio.core.graph import Graph, GraphError
from revstudio.core.grouping import group_nodes, group_users, port_names, ungroup
from revstudio.core.project import dumps, loads


def revnet() -> Graph:
    """The DESIGN example: x -> split -> (conv) -> merge -> concat -> y."""
    g = Graph("revnet")
    g.add_node("Input", "x", {"shape": [8, 16, 16]}, pos=(0, 0))
    g.add_node("Split", "s", {"sections": 2}, pos=(100, 0))
    g.add_node("Conv", "f", {"out_channels": 4, "kernel_size": 3, "padding": "same"}, pos=(200, -50))
    g.add_node("Merge", "m", {"mode": "add"}, pos=(300, 0))
    g.add_node("Concat", "c", pos=(400, 0))
    g.add_node("Output", "y", pos=(500, 0))
    for src, dst in [("x.out", "s.in"), ("s.out1", "f.in"), ("s.out0", "m.in0"), ("f.out", "m.in1"),
                     ("m.out", "c.in0"), ("s.out1", "c.in1"), ("c.out", "y.in")]:
        g.connect(src, dst)
    return g


def facts(g: Graph) -> tuple[set[tuple[str, str, str]], set[str], dict[str, tuple[float, float]]]:
    nodes = {(n.id, n.type, dumps_params(n.params)) for n in g.nodes.values()}
    return nodes, {str(e) for e in g.edges}, {n.id: n.pos for n in g.nodes.values()}


def dumps_params(params: dict) -> str:
    import json

    return json.dumps(params, sort_keys=True)


@pytest.mark.parametrize("selection", [["f"], ["f", "m"], ["s", "f", "m"], ["s", "f", "m", "c"], ["x", "s"],
                                       ["c", "y"], ["x", "s", "f", "m", "c", "y"]])
def test_group_then_ungroup_gives_the_graph_back(selection: list[str]) -> None:
    g = revnet()
    original = dumps(g)
    stack = UndoStack()
    cmd = group_nodes(g, selection)
    stack.push(cmd)
    grouped = dumps(g)
    assert dumps(loads(grouped)) == grouped  # the editor's files always load
    body = g.groups[cmd.group_name]
    assert set(selection) <= set(body.nodes)
    assert not set(selection) & set(g.nodes)
    assert g.node(cmd.node_id).params == {"group": cmd.group_name}
    stack.push(ungroup(g, cmd.node_id))
    assert facts(g) == facts(revnet())
    assert g.groups == {}
    stack.undo()
    assert dumps(g) == grouped
    stack.undo()
    assert dumps(g) == original
    stack.redo()
    stack.redo()
    assert facts(g) == facts(revnet())


def test_group_body_and_ports_follow_the_naming_rule() -> None:
    g = revnet()
    cmd = group_nodes(g, ["f", "m"], name="blk", group_name="block")
    cmd.do()
    body = g.groups["block"]
    ins = [n.params["port"] for n in body.nodes.values() if n.type == "GroupInput"]
    outs = [n.params["port"] for n in body.nodes.values() if n.type == "GroupOutput"]
    assert ins == ["in0", "in1"] and outs == ["out"]
    assert g.ports("blk") == (("in0", "in1"), ("out",))
    assert {str(e) for e in g.edges_of("blk")} == {"s.out1 -> blk.in0", "s.out0 -> blk.in1", "blk.out -> c.in0"}
    assert {str(e) for e in body.edges} == {
        "input.out -> f.in", "input1.out -> m.in0", "f.out -> m.in1", "m.out -> output.in"}
    # the Group node sits at the centre of the selection
    assert g.node("blk").pos == (250.0, -25.0)


def test_one_source_feeding_two_selected_nodes_is_one_input() -> None:
    g = Graph()
    g.add_node("Input", "x")
    g.add_node("Activation", "a")
    g.add_node("Activation", "b")
    g.add_node("Merge", "m")
    g.add_node("Output", "y")
    g.add_node("Output", "z")
    for src, dst in [("x.out", "a.in"), ("x.out", "b.in"), ("a.out", "m.in0"), ("b.out", "m.in1"),
                     ("m.out", "y.in"), ("m.out", "z.in")]:
        g.connect(src, dst)
    cmd = group_nodes(g, ["a", "b", "m"])
    cmd.do()
    body = g.groups[cmd.group_name]
    assert [n.params["port"] for n in body.nodes.values() if n.type == "GroupInput"] == ["in"]
    assert [n.params["port"] for n in body.nodes.values() if n.type == "GroupOutput"] == ["out"]
    assert [str(e) for e in g.edges_of(cmd.node_id)] == [
        f"x.out -> {cmd.node_id}.in", f"{cmd.node_id}.out -> y.in", f"{cmd.node_id}.out -> z.in"]
    assert {str(e) for e in body.edges} >= {"input.out -> a.in", "input.out -> b.in", "m.out -> output.in"}
    ungroup(g, cmd.node_id).do()
    assert {str(e) for e in g.edges} == {"x.out -> a.in", "x.out -> b.in", "a.out -> m.in0", "b.out -> m.in1",
                                         "m.out -> y.in", "m.out -> z.in"}


def test_grouping_refuses_a_selection_that_would_feed_itself() -> None:
    g = revnet()
    with pytest.raises(GraphError, match="cycle.*'f'"):
        group_nodes(g, ["s", "m"])  # s -> f -> m goes outside and back


def test_grouping_refuses_bad_requests() -> None:
    g = revnet()
    with pytest.raises(GraphError, match="at least one"):
        group_nodes(g, [])
    with pytest.raises(GraphError, match="no node"):
        group_nodes(g, ["zz"])
    g.set_group("taken", Graph("taken"))
    with pytest.raises(GraphError, match="already a group"):
        group_nodes(g, ["f"], group_name="taken")
    with pytest.raises(GraphError, match="already exists"):
        group_nodes(g, ["f"], name="m")
    with pytest.raises(GraphError, match="not allowed"):
        group_nodes(g, ["f"], group_name="a b")
    body = Graph("b")
    body.add_node("GroupInput", "i")
    g.set_group("b", body)
    with pytest.raises(GraphError, match="belongs to its group"):
        group_nodes(body, ["i"])


def test_ungroup_renames_ids_that_are_taken_meanwhile_and_offsets_positions() -> None:
    g = revnet()
    stack = UndoStack()
    cmd = group_nodes(g, ["f", "m"])
    stack.push(cmd)
    g.add_node("Dropout", "f")  # the id f is now used outside
    stack.push(SetParam(g, cmd.node_id, "unused", None))
    g.move(cmd.node_id, (1250, 975))
    before = dumps(g)
    stack.push(ungroup(g, cmd.node_id))
    assert g.node("f").type == "Dropout" and g.node("f1").type == "Conv"
    assert g.node("f1").pos == (1200.0, 950.0) and g.node("m").pos == (1300.0, 1000.0)
    assert "f1.out -> m.in1" in {str(e) for e in g.edges}
    stack.undo()
    assert dumps(g) == before


def test_ungroup_keeps_a_group_that_is_still_used() -> None:
    g = revnet()
    cmd = group_nodes(g, ["f"])
    cmd.do()
    g.add_node("Group", "second", {"group": cmd.group_name})
    assert group_users(g, cmd.group_name, exclude=[cmd.node_id]) == ["second"]
    ungroup(g, cmd.node_id).do()
    assert cmd.group_name in g.groups


def test_ungroup_a_pass_through_body() -> None:
    g = Graph()
    g.add_node("Input", "x")
    g.add_node("Group", "grp", {"group": "wire"})
    g.add_node("Output", "y")
    body = Graph("wire")
    body.add_node("GroupInput", "i", {"port": "in"})
    body.add_node("GroupOutput", "o", {"port": "out"})
    body.connect("i.out", "o.in")
    g.set_group("wire", body)
    g.connect("x.out", "grp.in")
    g.connect("grp.out", "y.in")
    ungroup(g, "grp").do()
    assert [str(e) for e in g.edges] == ["x.out -> y.in"] and g.groups == {}


def test_ungroup_drops_a_loop_from_the_group_node_to_itself() -> None:
    g = revnet()
    cmd = group_nodes(g, ["f"])
    cmd.do()
    g.connect(f"{cmd.node_id}.out", f"{cmd.node_id}.in")  # odd, but the graph allows it
    ungroup(g, cmd.node_id).do()
    assert all(e.src.node in g.nodes and e.dst.node in g.nodes for e in g.edges)
    assert dumps(loads(dumps(g))) == dumps(g)


def test_ungroup_refuses_other_nodes() -> None:
    g = revnet()
    with pytest.raises(GraphError, match="not a Group"):
        ungroup(g, "f")
    g.add_node("Group", "orphan", {"group": "nowhere"})
    with pytest.raises(GraphError, match="no existing group"):
        ungroup(g, "orphan")


def test_ungroup_inside_a_body_never_drops_the_definition() -> None:
    g = revnet()
    inner = group_nodes(g, ["f"])
    inner.do()
    outer = group_nodes(g, [inner.node_id, "m"])
    outer.do()
    body = g.groups[outer.group_name]
    ungroup(body, inner.node_id).do()
    assert inner.group_name in g.groups  # the project may still use it; only the checker knows


def test_grouping_inside_a_body_adds_a_nested_group_to_the_project() -> None:
    g = revnet()
    outer = group_nodes(g, ["s", "f", "m"])
    outer.do()
    body = g.groups[outer.group_name]
    seen = []
    g.group_changed.sub(lambda name, old, new: seen.append(name))
    before = dumps(g)
    inner = group_nodes(body, ["f"], project=g)
    inner.do()
    assert seen == [inner.group_name]  # the project's observers (the editor's tabs) hear of it
    assert inner.group_name in g.groups and body.nodes[inner.node_id].type == "Group"
    assert g.groups[inner.group_name].groups is g.groups  # the new body shares the project's groups
    from revstudio.core.check import check

    assert check(g).valid and check(g).shape("c.out") == (8, 16, 16)
    # ungrouping inside the body drops the nested definition, which nothing else uses now
    again = ungroup(body, inner.node_id, project=g)
    again.do()
    assert inner.group_name not in g.groups and "f" in body.nodes
    again.undo()
    inner.undo()
    assert dumps(g) == before


def test_ungroup_inside_a_body_keeps_a_definition_used_elsewhere() -> None:
    g = revnet()
    inner = group_nodes(g, ["f"])
    inner.do()
    outer = group_nodes(g, [inner.node_id, "m"])
    outer.do()
    body = g.groups[outer.group_name]
    g.add_node("Group", "elsewhere", {"group": inner.group_name})
    ungroup(body, inner.node_id, project=g).do()
    assert inner.group_name in g.groups


def test_port_names() -> None:
    assert port_names("in", 1) == ["in"]
    assert port_names("out", 3) == ["out0", "out1", "out2"]
    assert port_names("in", 0) == []


def test_a_new_group_node_is_named_after_its_body() -> None:
    g = revnet()
    first = group_nodes(g, ["f"])
    first.do()
    assert first.node_id == first.group_name == "group1"
    g.add_node("Linear", "group2", {"out_features": 3}, pos=(600, 0))  # the next name is taken as a node id
    second = group_nodes(g, ["c"])
    second.do()
    assert second.group_name == "group2" and second.node_id == "group21"
