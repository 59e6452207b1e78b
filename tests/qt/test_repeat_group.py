"""Group and Repeat nodes in one step: a new Group/Repeat takes the project's only group, and a
Group node turns into a Repeat of its group from its context menu or Edit menu (it took about five
steps: add a Repeat, pick its group by hand, rewire each port, move it, delete the Group)."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from revstudio.core.graph import Graph, GraphError
from revstudio.core.group_repeat import new_node_params, repeat_group_node


def test_a_new_group_or_repeat_node_takes_the_only_group_but_not_inside_it(grouped_stack):
    g, _ = grouped_stack
    assert new_node_params("Repeat", g) == {"group": "block"}
    assert new_node_params("Group", g) == {"group": "block"}
    assert new_node_params("Conv", g) == {}
    assert new_node_params("Repeat", g, inside="block") == {}  # it would contain itself
    g.set_group("other", g.groups["block"].copy())
    assert new_node_params("Repeat", g) == {}  # two to choose from: the user picks


def test_repeat_group_node_keeps_id_place_and_wires_and_undoes_whole(grouped_stack):
    g, gid = grouped_stack
    before = (list(g.nodes), list(g.edges), g.nodes[gid].pos)
    cmd = repeat_group_node(g, gid)
    cmd.do()
    node = g.nodes[gid]
    assert (node.type, node.params, node.pos) == ("Repeat", {"group": "block"}, before[2])
    assert (list(g.nodes), list(g.edges)) == before[:2]
    cmd.undo()
    assert g.nodes[gid].type == "Group" and (list(g.nodes), list(g.edges)) == before[:2]


def test_repeat_group_node_refuses_what_cannot_repeat(grouped_stack):
    g, gid = grouped_stack
    with pytest.raises(GraphError, match="not a Group node"):
        repeat_group_node(g, "x")
    g.groups["block"].add_node("GroupOutput", "extra", {"port": "out1"}, (0, 300))
    with pytest.raises(GraphError, match="1 input but 2 outputs"):
        repeat_group_node(g, gid)


def test_a_repeat_added_on_the_canvas_takes_the_only_group_in_one_undo_step(make_window, grouped_stack):
    g, _ = grouped_stack
    window = make_window(g)
    doc, view = window.document, window.tabs.current_view()
    count = doc.undo_stack.count()
    new = view.add_node_at("Repeat", (0.0, 300.0))
    assert doc.graph.nodes[new].params == {"group": "block"}
    assert doc.undo_stack.count() == count + 1
    doc.undo_stack.undo()
    assert new not in doc.graph.nodes
    # inside the group's own tab a new Repeat names nothing (it would contain itself)
    assert window.tabs.open_group("block")
    inner = window.tabs.current_view().add_node_at("Repeat", (0.0, 300.0))
    assert doc.graph.groups["block"].nodes[inner].params == {}


def test_repeat_this_group_from_the_menus_turns_the_group_node_into_a_repeat(make_window, grouped_stack):
    g, gid = grouped_stack
    window = make_window(g)
    doc, view = window.document, window.tabs.current_view()
    edges, pos = list(doc.graph.edges), doc.graph.nodes[gid].pos
    view.select_nodes([gid])
    menu, _ = view.build_context_menu(view._scene.node_items[gid].sceneBoundingRect().center())
    texts = [a.text() for a in menu.actions()]
    assert "Repeat This Group" in texts
    edit_menu = [a.text().replace("&", "") for a in window.actions_by_name.values()]
    assert "Repeat This Group" in edit_menu
    count = doc.undo_stack.count()
    window.actions_by_name["repeat_group"].trigger()
    node = doc.graph.nodes[gid]
    assert (node.type, node.params["group"], node.pos) == ("Repeat", "block", pos)
    assert list(doc.graph.edges) == edges and doc.undo_stack.count() == count + 1
    assert not [d for d in doc.report.diagnostics if d.severity == "error"]
    assert view.selected_node_ids() == [gid]
    doc.undo_stack.undo()
    assert doc.graph.nodes[gid].type == "Group" and list(doc.graph.edges) == edges
    # a node that is no Group gets no such entry, and the action says what to select
    view.select_nodes(["x"])
    menu, _ = view.build_context_menu(view._scene.node_items["x"].sceneBoundingRect().center())
    assert "Repeat This Group" not in [a.text() for a in menu.actions()]
    assert not window.tabs.repeat_selected_group()


def _more_groups(g: Graph) -> None:
    """'pair' (two inputs summed: a Group, not a Repeat) and 'outer' (runs 'block')."""
    pair = Graph("pair")
    pair.add_node("GroupInput", "i0", {"port": "in0"}, (0, 0))
    pair.add_node("GroupInput", "i1", {"port": "in1"}, (0, 100))
    pair.add_node("Merge", "m", {"mode": "add"}, (200, 0))
    pair.add_node("GroupOutput", "o", {"port": "out"}, (400, 0))
    for s, d in (("i0.out", "m.in0"), ("i1.out", "m.in1"), ("m.out", "o.in")):
        pair.connect(s, d)
    g.set_group("pair", pair)
    outer = Graph("outer")
    outer.add_node("GroupInput", "i", {"port": "in"}, (0, 0))
    outer.add_node("Group", "b", {"group": "block"}, (200, 0))
    outer.add_node("GroupOutput", "o", {"port": "out"}, (400, 0))
    outer.connect("i.out", "b.in")
    outer.connect("b.out", "o.in")
    g.set_group("outer", outer)


def test_quick_add_off_a_port_offers_a_group_or_repeat_of_each_group_that_fits(make_window, grouped_stack):
    # dragged off a port the list had no Group or Repeat: their ports come from a group, none by default
    from PySide6.QtCore import QPointF

    g, gid = grouped_stack
    _more_groups(g)
    window = make_window(g)
    doc, view = window.document, window.tabs.current_view()
    offered = view.open_quick_add(QPointF(0, 300), "x.out").visible_types()
    groups = [t for t in offered if t.startswith(("Group", "Repeat"))]
    assert groups == ["Group:block", "Group:outer", "Group:pair", "Repeat:block", "Repeat:outer"], offered
    assert "Conv" in offered  # the types stay
    count = doc.undo_stack.count()
    view.popup.choose("Repeat:block")
    new = view.selected_node_ids()[0]
    assert (doc.graph.nodes[new].type, doc.graph.nodes[new].params) == ("Repeat", {"group": "block"})
    assert f"x.out -> {new}.in" in [str(e) for e in doc.graph.edges]
    assert doc.undo_stack.count() == count + 1
    assert not [d for d in doc.report.diagnostics if d.severity == "error" and d.node == new]
    doc.undo_stack.undo()
    assert new not in doc.graph.nodes and [str(e) for e in doc.graph.edges] == ["x.out -> block.in", "block.out -> y.in"]
    # off an input port: what gives an output, wired into it (replacing the wire there)
    view.open_quick_add(QPointF(600, 300), "y.in").choose("Group:pair")
    new = view.selected_node_ids()[0]
    assert doc.graph.nodes[new].params == {"group": "pair"}
    assert [str(e) for e in doc.graph.edges_into("y")] == [f"{new}.out -> y.in"]
    # inside block's own body: neither block nor outer (which runs block) would be allowed there
    assert window.tabs.open_group("block")
    inner = window.tabs.current_view()
    offered = inner.open_quick_add(QPointF(0, 300), "input.out").visible_types()
    assert [t for t in offered if t.startswith(("Group:", "Repeat:"))] == ["Group:pair"]
    inner.popup.close()


def test_shift_a_offers_a_group_or_repeat_of_each_group_beside_the_types(make_window, grouped_stack):
    # Shift+A listed the Group and Repeat types only: a Repeat of an existing group was a right-click
    # on a Group node away (Repeat This Group), or a Repeat whose group was picked by hand
    from PySide6.QtCore import QPointF
    from PySide6.QtTest import QTest

    g, _ = grouped_stack
    _more_groups(g)
    window = make_window(g)
    doc, view = window.document, window.tabs.current_view()
    view.setFocus()
    view.open_quick_add(QPointF(0, 400))
    offered = view.popup.visible_types()
    # in the list's order: each type, then its offers by group name
    assert [t for t in offered if t.startswith(("Group", "Repeat"))] == [
        "Group", "Group:block", "Group:outer", "Group:pair", "Repeat", "Repeat:block", "Repeat:outer"], offered
    QTest.keyClicks(view.popup.search, "repeat: out")
    assert view.popup.visible_types()[0] == "Repeat:outer"
    count = doc.undo_stack.count()
    QTest.keyClick(view.popup.search, Qt.Key.Key_Return)
    new = view.selected_node_ids()[0]
    assert (doc.graph.nodes[new].type, doc.graph.nodes[new].params) == ("Repeat", {"group": "outer"})
    assert doc.undo_stack.count() == count + 1
    assert not [d for d in doc.report.diagnostics if d.severity == "error" and d.node == new and d.port is None]
    doc.undo_stack.undo()
    assert new not in doc.graph.nodes
    # inside block's body: neither block nor outer (which runs block)
    assert window.tabs.open_group("block")
    inner = window.tabs.current_view()
    offered = inner.open_quick_add(QPointF(0, 300)).visible_types()
    assert [t for t in offered if ":" in t] == ["Group:pair"]
    inner.popup.close()


def test_ungroup_or_repeat_on_a_repeat_node_says_it_is_one(make_window, grouped_stack):
    # a Repeat looks like a Group on the canvas: "Select a Group node to ungroup" with one selected
    # read as if the selection had been lost
    g, gid = grouped_stack
    window = make_window(g)
    view = window.tabs.current_view()
    messages: list[str] = []
    window.tabs.message.connect(messages.append)
    view.select_nodes([gid])
    assert window.tabs.repeat_selected_group()
    assert not window.tabs.ungroup_selection()
    assert messages[-1] == (f"Select a Group node to ungroup (Ctrl+Shift+G): {gid} is a Repeat node; "
                            "Ungroup unpacks a Group node: Unroll Repeat (Edit) first turns it into Group nodes")
    assert not window.tabs.repeat_selected_group()
    assert messages[-1] == f"Select a Group node to repeat its group: {gid} is a Repeat node; set its times in the inspector"
    window.document.undo_stack.clear()
