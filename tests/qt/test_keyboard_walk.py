"""Alt+arrows walk the graph along its wires: keyboard-only navigation without Ctrl+F for each node.

Before, the arrows only nudged the selection and Ctrl+F was the one way to reach a node from the
keyboard: following a branch meant typing every id.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

ALT = Qt.KeyboardModifier.AltModifier


def _walk(window, view, key) -> list[str]:
    QTest.keyClick(view, key, ALT)
    return view.selected_node_ids()


def test_alt_arrows_follow_the_wires_and_move_nothing(make_window, revnet, settle):
    # x -> s (Split); s feeds m (top), c and f (bottom); f -> m -> c -> y
    window = make_window(revnet)
    view = window.current_view()
    view.setFocus()
    settle()
    before = {n.id: n.pos for n in revnet}
    K = Qt.Key
    assert _walk(window, view, K.Key_Right) == ["x"]  # nothing selected: the first Input
    assert _walk(window, view, K.Key_Right) == ["s"]
    assert _walk(window, view, K.Key_Right) == ["m"]  # of the three it feeds, the topmost
    assert _walk(window, view, K.Key_Down) == ["c"]   # the next one s feeds, going down
    assert _walk(window, view, K.Key_Down) == ["f"]
    assert _walk(window, view, K.Key_Down) == ["f"]   # the last: stays, and says so
    assert "f is the last node fed by s" in window.status_bar.currentMessage()
    assert _walk(window, view, K.Key_Up) == ["c"]
    assert _walk(window, view, K.Key_Left) == ["m"]   # c's first input is fed by m
    assert _walk(window, view, K.Key_Left) == ["s"]   # m.in0 is fed by s
    assert _walk(window, view, K.Key_Left) == ["x"]
    assert _walk(window, view, K.Key_Left) == ["x"]
    assert "Nothing feeds x" in window.status_bar.currentMessage()
    view.select_nodes(["c"])
    assert _walk(window, view, K.Key_Right) == ["y"]
    assert _walk(window, view, K.Key_Right) == ["y"]
    assert "y feeds no node" in window.status_bar.currentMessage()
    assert {n.id: n.pos for n in revnet} == before and window.document.undo_stack.count() == 0
    QTest.keyClick(view, K.Key_Right)  # without Alt the arrows still nudge the selection
    assert revnet.node("y").pos != before["y"]


def test_walking_scrolls_the_node_into_view(make_window, settle):
    from revstudio.core.generate import revnet_chain

    graph = revnet_chain(8, channels=4, size=8)
    window = make_window(graph)
    view = window.current_view()
    view.reset_zoom()
    view.select_nodes(["x"])
    view.setFocus()
    settle()
    for _ in range(40):
        QTest.keyClick(view, Qt.Key.Key_Right, ALT)
    (node,) = view.selected_node_ids()
    assert node != "x"
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert shown.intersects(view.scene().node_items[node].sceneBoundingRect())


def test_edit_go_to_walks_as_the_keys_do(make_window, revnet):
    window = make_window(revnet)
    view = window.current_view()
    view.select_nodes(["s"])
    window.actions_by_name["walk_right"].trigger()
    assert view.selected_node_ids() == ["m"]
    window.actions_by_name["walk_down"].trigger()
    assert view.selected_node_ids() == ["c"]
    window.actions_by_name["walk_left"].trigger()
    assert view.selected_node_ids() == ["m"]
    assert window.actions_by_name["walk_up"].shortcut().toString() == "Alt+Up"


def test_in_a_group_tab_alt_right_starts_at_its_group_input(make_window, grouped_stack, settle):
    g, gid = grouped_stack  # x -> [c, a] as group 'block' -> y
    g.groups["block"].add_node("Activation", "spare", {"fn": "relu"}, (-400, -300))  # unwired, above and left
    window = make_window(g)
    assert window.tabs.open_group("block")
    inner = window.tabs.current_view()
    body = g.groups["block"]
    (start,) = [n.id for n in body if n.type == "GroupInput"]
    inner.scene().clearSelection()
    inner.setFocus()
    settle()
    assert _walk(window, inner, Qt.Key.Key_Right) == [start]
    assert _walk(window, inner, Qt.Key.Key_Right) == ["c"]
