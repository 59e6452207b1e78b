"""Ctrl+F in a big project: the matches are counted, and Alt+Enter (or Select All) selects them all.

Finding "conv2" in a 40-block network used to select only the first of its 80 matches: to change
every conv2's kernel the user clicked each one. Now the popup says how many match and selects them
all at once, framed, with the inspector editing their shared parameters as one undo step.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from revstudio.core.generate import revnet_chain


def _find(window, text: str):
    view = window.current_view()
    popup = view.open_find()  # (Ctrl+F)
    QTest.keyClicks(popup.search, text)
    return view, popup


def test_alt_enter_selects_every_match_and_frames_them(make_window, settle):
    graph = revnet_chain(6, channels=4, size=8)
    window = make_window(graph)
    settle()
    view, popup = _find(window, "conv2")
    wanted = sorted(n for n in graph.nodes if n.endswith("conv2"))
    assert len(wanted) == 12
    assert popup.count.isVisible() and popup.count.text().startswith(f"12 of {len(graph.nodes)} nodes match")
    assert popup.select_all.isVisible() and popup.select_all.text() == "Select All 12"
    QTest.keyClick(popup.search, Qt.Key.Key_Return, Qt.KeyboardModifier.AltModifier)
    settle()
    assert not popup.isVisible()
    assert sorted(view.selected_node_ids()) == wanted
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    for node_id in wanted:
        assert shown.contains(view.scene().node_items[node_id].sceneBoundingRect().center()), node_id
    assert "Selected 12 nodes" in window.status_bar.currentMessage()
    # the inspector edits them all as one step
    window.inspector.editors["kernel_size"].set_text("5")
    settle()
    assert {graph.node(n).params["kernel_size"] for n in wanted} == {5}
    window.document.undo_stack.undo()
    assert {graph.node(n).params["kernel_size"] for n in wanted} == {3}


def test_the_select_all_button_does_what_alt_enter_does(make_window, settle):
    graph = revnet_chain(3, channels=4, size=8)
    window = make_window(graph)
    view, popup = _find(window, "relu")
    QTest.mouseClick(popup.select_all, Qt.MouseButton.LeftButton)
    settle()
    assert sorted(view.selected_node_ids()) == sorted(n for n in graph.nodes if n.endswith("relu"))


def test_one_match_has_no_select_all_and_enter_still_picks_one(make_window, settle):
    graph = revnet_chain(3, channels=4, size=8)
    window = make_window(graph)
    view, popup = _find(window, "b1_g_relu")
    assert popup.count.text() == f"1 of {len(graph.nodes)} nodes match"
    assert not popup.select_all.isVisible()
    QTest.keyClick(popup.search, Qt.Key.Key_Return)
    assert view.selected_node_ids() == ["b1_g_relu"]
    _, popup = _find(window, "nosuch")
    assert not popup.count.isVisible() and popup.nothing.isVisible()
