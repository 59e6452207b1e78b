"""Commands: each does one edit and undoes it exactly (the saved file is byte-identical)."""
from __future__ import annotations

import pytest

from revstudio.core.commands import (
    AddNode,
    Command,
    Connect,
    Disconnect,
    Macro,
    Move,
    RemoveNode,
    SetGroup,
    SetParam,
    UndoStack,
    add_subgraph,
    connect_replacing,
    copy_id,
    fresh_id,
    paste,
    remove_nodes,
)
from revstudio.core.graph import Edge, Graph, GraphError, Node, PortRef
from revstudio.core.project import dumps


def chain() -> Graph:
    g = Graph("chain")
    g.add_node("Input", "x", {"shape": [4, 8]})
    g.add_node("Conv", "a", {"out_channels": 4, "kernel_size": 3}, pos=(100, 0))
    g.add_node("Activation", "b", {"fn": "relu"}, pos=(200, 0))
    g.add_node("Conv", "c", {"out_channels": 4}, pos=(300, 0))
    g.add_node("Output", "y", pos=(400, 0))
    for src, dst in [("x", "a"), ("a", "b"), ("b", "c"), ("c", "y")]:
        g.connect(f"{src}.out", f"{dst}.in")
    g.training = {"steps": 10}
    return g


def roundtrip(graph: Graph, cmd: Command, stack: UndoStack | None = None) -> tuple[str, str]:
    """Push ``cmd``; undo must restore the file before, redo the file after."""
    stack = stack or UndoStack()
    before = dumps(graph)
    stack.push(cmd)
    after = dumps(graph)
    assert after != before
    stack.undo()
    assert dumps(graph) == before
    stack.redo()
    assert dumps(graph) == after
    return before, after


def test_add_node() -> None:
    g = chain()
    roundtrip(g, AddNode(g, Node("n", "Dropout", {"p": 0.1}, (5, 5))))
    assert list(g.nodes)[-1] == "n"


def test_add_node_at_index() -> None:
    g = chain()
    roundtrip(g, AddNode(g, Node("n", "Dropout"), index=0))
    assert list(g.nodes)[0] == "n"


@pytest.mark.parametrize("victim", ["x", "b", "y"])
def test_remove_node_restores_node_and_edge_order(victim: str) -> None:
    g = chain()
    roundtrip(g, RemoveNode(g, victim))
    assert victim not in g


def test_remove_several_nodes_in_any_order() -> None:
    g = chain()
    g.connect("a.out", "y.in2")
    roundtrip(g, remove_nodes(g, ["c", "a", "c", "missing"]))
    assert list(g.nodes) == ["x", "b", "y"] and g.edges == []


def test_connect_and_disconnect() -> None:
    g = chain()
    roundtrip(g, Connect(g, "x.out", "c.in1"))
    roundtrip(g, Disconnect(g, g.edges[1]))  # a middle edge comes back in the middle


def test_connect_refuses_dangling_or_duplicate_edges() -> None:
    g = chain()
    with pytest.raises(GraphError, match="does not exist"):
        Connect(g, "x.out", "zz.in").do()
    with pytest.raises(GraphError, match="already exists"):
        Connect(g, "x.out", "a.in").do()
    with pytest.raises(GraphError, match="no edge"):
        Disconnect(g, Edge(PortRef("x", "out"), PortRef("y", "in"))).do()


def test_connect_replacing_swaps_the_feed_of_an_input() -> None:
    g = chain()
    roundtrip(g, connect_replacing(g, "x.out", "c.in"))
    assert [str(e.src) for e in g.edges_into("c", "in")] == ["x.out"]
    # nothing to replace: a plain Connect
    assert isinstance(connect_replacing(g, "x.out", "c.extra"), Connect)


def test_set_param_set_change_and_reset() -> None:
    g = chain()
    roundtrip(g, SetParam(g, "a", "stride", 2))                 # newly set
    roundtrip(g, SetParam(g, "a", "out_channels", 8))           # changed
    roundtrip(g, SetParam(g, "a", "out_channels", None))        # reset to default
    # a reset's undo puts the key back where it was, so the inspector order is stable
    assert list(g.node("a").params) == ["kernel_size", "stride"]
    g2 = chain()
    stack = UndoStack()
    stack.push(SetParam(g2, "a", "out_channels", None))
    stack.undo()
    assert list(g2.node("a").params) == ["out_channels", "kernel_size"]


def test_set_param_merges_consecutive_edits_of_one_field() -> None:
    g = chain()
    stack = UndoStack()
    before = dumps(g)
    for value in (5, 6, 7):
        stack.push(SetParam(g, "a", "out_channels", value))
    assert len(stack) == 1 and g.node("a").params["out_channels"] == 7
    stack.undo()
    assert dumps(g) == before
    stack.redo()
    assert g.node("a").params["out_channels"] == 7
    stack.push(SetParam(g, "a", "kernel_size", 5))  # another field: no merge
    assert len(stack) == 2


def test_a_macro_of_param_edits_merges_with_the_same_edit_of_the_same_nodes() -> None:
    g = chain()
    stack = UndoStack()
    before = dumps(g)
    for value in (5, 6):
        stack.push(Macro("Set out_channels on 2 Conv nodes",
                         [SetParam(g, n, "out_channels", value) for n in ("a", "c")]))
    assert len(stack) == 1 and [g.node(n).params["out_channels"] for n in "ac"] == [6, 6]
    stack.undo()
    assert dumps(g) == before
    stack.redo()
    stack.push(Macro("other field", [SetParam(g, n, "kernel_size", 5) for n in ("a", "c")]))
    stack.push(Macro("one node", [SetParam(g, "a", "kernel_size", 1)]))
    stack.push(Macro("not a param edit", [Move(g, {"a": (1, 1)})]))
    assert len(stack) == 4

def test_edits_merged_back_to_where_they_began_leave_no_step() -> None:
    """Typing into a field and back (or an invalid text putting the old value back) changes
    nothing: the step goes, and a saved stack is clean again, as Qt drops an obsolete merge."""
    g = chain()
    old = g.node("a").params["out_channels"]
    g.node("c").params["out_channels"] = 8
    stack = UndoStack()
    stack.push(Move(g, {"a": (5, 5)}))
    stack.set_clean()
    for value in (9, 99, old):
        stack.push(SetParam(g, "a", "out_channels", value))
    assert len(stack) == 1 and stack.is_clean()
    for value in (9, None, 9, None):  # a param the file never had: set, then back to its default
        stack.push(SetParam(g, "a", "stride", value))
    assert len(stack) == 1 and "stride" not in g.node("a").params
    for value in (3, old):
        stack.push(Macro("shared", [SetParam(g, n, "out_channels", value) for n in ("a", "c")]))
    assert len(stack) == 2  # c's value changed: not where it began


def test_no_merge_into_the_saved_state() -> None:
    g = chain()
    stack = UndoStack()
    stack.push(SetParam(g, "a", "out_channels", 5))
    stack.set_clean()
    stack.push(SetParam(g, "a", "out_channels", 6))
    assert len(stack) == 2 and not stack.is_clean()
    stack.undo()
    assert stack.is_clean() and g.node("a").params["out_channels"] == 5


def test_move() -> None:
    g = chain()
    roundtrip(g, Move(g, {"a": (1.5, 2), "b": (3, 4)}))
    assert g.node("a").pos == (1.5, 2.0)


def test_set_group_add_replace_remove_keep_group_order() -> None:
    g = chain()
    for name in ("g1", "g2", "g3"):
        body = Graph(name)
        body.add_node("GroupInput", "i")
        g.set_group(name, body)
    new = Graph("g2")
    new.add_node("GroupOutput", "o")
    roundtrip(g, SetGroup(g, "g4", Graph("g4")))
    roundtrip(g, SetGroup(g, "g2", new))
    roundtrip(g, SetGroup(g, "g1", None))
    assert list(g.groups) == ["g2", "g3", "g4"]  # redo removed g1 again
    stack = UndoStack()
    stack.push(SetGroup(g, "g3", None))
    stack.undo()
    assert list(g.groups) == ["g2", "g3", "g4"] and g.groups["g2"] is new


def test_macro_rolls_back_when_a_child_fails() -> None:
    g = chain()
    before = dumps(g)
    bad = Macro("bad", [AddNode(g, Node("n", "Dropout")), Connect(g, "n.out", "zz.in")])
    with pytest.raises(GraphError):
        bad.do()
    assert dumps(g) == before


def test_add_subgraph_renames_colliding_ids_and_keeps_inner_edges() -> None:
    g = chain()
    nodes = [g.node("a").copy(), g.node("b").copy(), Node("new", "Dropout")]
    cmd = add_subgraph(g, nodes, g.edges, offset=(10, 20))
    assert paste is add_subgraph
    roundtrip(g, cmd)
    assert cmd.mapping == {"a": "a_copy", "b": "b_copy", "new": "new"}
    pasted = [e for e in g.edges if e.src.node in ("a_copy", "b_copy")]
    assert [str(e) for e in pasted] == ["a_copy.out -> b_copy.in"]  # edges to outside nodes dropped
    assert g.node("a_copy").pos == (110.0, 20.0)
    assert g.node("a_copy").params == g.node("a").params and g.node("a_copy").params is not g.node("a").params


def test_add_subgraph_accepts_string_edges_and_refuses_repeated_ids() -> None:
    g = Graph()
    cmd = add_subgraph(g, [Node("p", "A"), Node("q", "B")], [("p.out", "q.in"), ["p.out", "q.in"]])
    cmd.do()
    assert [str(e) for e in g.edges] == ["p.out -> q.in"]
    with pytest.raises(GraphError, match="twice"):
        add_subgraph(g, [Node("p", "A"), Node("p", "A")])


def test_fresh_id() -> None:
    taken = {"conv", "conv1", "x" * 64}
    assert fresh_id("new", taken) == "new"
    assert fresh_id("conv", taken) == "conv2"
    assert fresh_id("conv1", taken) == "conv2"
    assert fresh_id("x" * 64, taken) == "x" * 56 + "1"


def test_copy_id() -> None:
    taken = {"conv1", "conv1_copy", "conv1_copy2", "y" * 64}
    assert copy_id("conv2", taken) == "conv2"  # free: a paste into another project keeps it
    assert copy_id("conv1", taken) == "conv1_copy3"
    assert copy_id("conv1_copy", taken) == "conv1_copy3"  # a copy of a copy: the same source's next
    assert copy_id("conv1", {"conv1"}) == "conv1_copy"
    assert copy_id("y" * 64, taken) == "y" * 56 + "_copy"


def test_undo_stack_semantics() -> None:
    g = chain()
    stack = UndoStack()
    assert not stack.can_undo() and not stack.undo() and not stack.redo()
    stack.push(Move(g, {"a": (0, 0)}))
    stack.push(Move(g, {"b": (0, 0)}))
    assert stack.index == 2 and stack.can_undo() and not stack.can_redo()
    stack.undo()
    stack.set_clean()
    stack.undo()
    stack.push(Move(g, {"c": (0, 0)}))  # drops the redo branch and the clean state with it
    assert len(stack) == 1 and not stack.can_redo() and not stack.is_clean()
    stack.clear()
    assert len(stack) == 0 and stack.is_clean()


def test_set_training_is_undoable_and_emits():
    from revstudio.core.commands import SetTraining, UndoStack
    from revstudio.core.graph import Graph

    g = Graph()
    g.training = {"batch_size": 8}
    seen = []
    g.training_changed.sub(lambda old, new: seen.append((old, new)))
    stack = UndoStack()
    section = {"batch_size": 64, "steps": 10}
    stack.push(SetTraining(g, section))
    section["steps"] = 99  # the command keeps its own copy
    assert g.training == {"batch_size": 64, "steps": 10}
    stack.undo()
    assert g.training == {"batch_size": 8}
    stack.redo()
    assert g.training["batch_size"] == 64
    assert len(seen) == 3


def test_nudges_of_the_same_nodes_merge_and_back_to_start_is_a_noop() -> None:
    from revstudio.core.commands import Nudge

    g = Graph()
    g.add_node("Input", "x", {"shape": [4]}, (0, 0))
    first = Nudge(g, {"x": (5, 0)})
    first.do()
    second = Nudge(g, {"x": (10, 0)})
    second.do()
    assert first.merge(second) and first.new == {"x": (10.0, 0.0)} and not first.is_noop()
    first.undo()
    assert g.node("x").pos == (0.0, 0.0)
    other = Nudge(g, {"x": (5, 5)})
    assert not first.merge(Nudge(Graph(), {"x": (0, 0)}))
    back = Nudge(g, {"x": (0, 0)})
    other.do()
    back.do()
    assert other.merge(back) and other.is_noop()
