"""Ctrl+F finds nodes inside group bodies too, and opens the group's tab on the one chosen.

In revnet_coupling, searching the main canvas for "f_conv1" or "coupling" said "No node on this
canvas matches": everything but six nodes lives in group bodies, and nothing said where.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from revstudio.qt.files import read_project

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_coupling.revs"


def test_find_lists_a_group_bodys_nodes_and_opens_its_tab_on_the_chosen_one(make_window, settle, qtbot):
    window = make_window(read_project(str(EXAMPLE)))
    view = window.current_view()
    popup = view.open_find()
    QTest.keyClicks(popup.search, "f_conv1")
    (key,) = popup.visible_types()
    assert popup.list.item(0).text().endswith("\u2014 in group f")
    assert popup.count.text() == "0 of 6 nodes match (and 1 in groups)"
    assert not popup.nothing.isVisible()
    QTest.keyClick(popup.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.tabs.current_view() is not view
                    and window.tabs.current_view().selected_node_ids() == ["f_conv1"], timeout=5_000)
    inner = window.tabs.current_view()
    assert window.tabs.tabText(window.tabs.currentIndex()) == "f"
    settle()
    shown = inner.mapToScene(inner.viewport().rect()).boundingRect()
    assert shown.contains(inner.scene().node_items["f_conv1"].sceneBoundingRect().center())
    assert "Found f_conv1 in group f" in window.status_bar.currentMessage()
    assert window.document.undo_stack.count() == 0  # finding edits nothing


def test_this_canvas_comes_first_and_select_all_takes_only_its_matches(make_window, settle):
    window = make_window(read_project(str(EXAMPLE)))
    view = window.current_view()
    popup = view.open_find()
    QTest.keyClicks(popup.search, "conv")  # stem (Conv) here; four Conv nodes in the f and g bodies
    keys = popup.visible_types()
    assert keys[0] == "stem" and len(keys) == 5
    assert popup.count.text().startswith("1 of 6 nodes match (and 4 in groups)")
    assert not popup.select_all.isVisible()  # one match here: nothing to select all of
    popup.close()
    popup = view.open_find()
    QTest.keyClicks(popup.search, "o")  # pool, logits, blocks, ... here, and nodes of every body
    here = [k for k in popup.visible_types() if "\x1f" not in k]
    assert len(here) > 1 and len(popup.visible_types()) > len(here)
    QTest.keyClick(popup.search, Qt.Key.Key_Return, Qt.KeyboardModifier.AltModifier)
    settle()
    assert sorted(view.selected_node_ids()) == sorted(here) and window.tabs.current_view() is view


def test_inside_a_groups_tab_its_own_nodes_come_first_and_the_main_canvas_is_not_listed(make_window, settle):
    window = make_window(read_project(str(EXAMPLE)))
    assert window.tabs.open_group("f")
    inner = window.tabs.current_view()
    popup = inner.open_find()
    QTest.keyClicks(popup.search, "conv1")
    assert popup.visible_types() == ["f_conv1", "g\x1fg_conv1"]
    popup.search.clear()
    QTest.keyClicks(popup.search, "stem")  # the main canvas's: Ctrl+F there finds it
    assert popup.visible_types() == [] and popup.nothing.isVisible()
