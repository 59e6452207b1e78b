"""Rename Group… (Edit menu, a group tab's menu, the inspector) renames a body and every use in one
undo step and retitles its tab; Edit > Groups lists every group, unused ones marked and deletable."""
from __future__ import annotations

from pathlib import Path

from revstudio.core.project import load

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_coupling.revs"


def _titles(tabs) -> list[str]:
    return [tabs.tabText(i) for i in range(tabs.count())]


def test_rename_group_from_the_edit_menu_renames_uses_and_retitles_the_open_tab(make_window, dialogs):
    window = make_window(load(EXAMPLE))
    tabs, doc = window.tabs, window.document
    assert tabs.open_group("block") and tabs.open_group("f")
    assert tabs.current_group() == "f"
    steps = doc.undo_stack.count()
    dialogs.texts.append("residual")
    window.actions_by_name["rename_group"].trigger()
    assert doc.undo_stack.count() == steps + 1  # one undo step
    assert "residual" in _titles(tabs) and "f" not in _titles(tabs)
    assert tabs.current_group() == "residual" == tabs.group_at(tabs.currentIndex())  # same tab, retitled
    assert doc.graph.groups["block"].nodes["coupling"].params["f"] == "residual"
    doc.undo_stack.undo()
    assert "f" in _titles(tabs) and "residual" not in _titles(tabs)
    assert doc.graph.groups["block"].nodes["coupling"].params["f"] == "f"
    doc.undo_stack.redo()
    assert tabs.current_group() == "residual"


def test_rename_group_refuses_a_name_in_use_with_a_clear_message(make_window, dialogs):
    window = make_window(load(EXAMPLE))
    window.tabs.open_group("f")
    steps = window.document.undo_stack.count()
    dialogs.texts.append("g")
    window.actions_by_name["rename_group"].trigger()
    assert window.document.undo_stack.count() == steps
    assert dialogs.errors and "already a group 'g'" in dialogs.errors[-1][1]
    dialogs.texts.append("two words")
    assert not window.group_names.rename()
    assert "not allowed" in dialogs.errors[-1][1]


def test_the_inspector_renames_the_group_a_repeat_node_uses(make_window, dialogs, qtbot):
    window = make_window(load(EXAMPLE))
    window.select_node("blocks")
    qtbot.wait(50)
    button = window.inspector.rename_group
    assert button.isVisibleTo(window.inspector)
    dialogs.texts.append("stage")
    button.click()
    assert window.document.graph.nodes["blocks"].params["group"] == "stage"
    assert "block" not in window.document.graph.groups


def test_an_unused_group_is_listed_as_unused_and_can_be_deleted(make_window, dialogs):
    window = make_window(load(EXAMPLE))
    names = window.group_names
    window.groups_menu.aboutToShow.emit()
    assert [a.text() for a in window.groups_menu.actions()] == ["block", "f", "g"]
    used = window.groups_menu.actions()[1].menu()  # f: used by block's coupling
    assert not next(a for a in used.actions() if a.text() == "Delete Group").isEnabled()
    assert not names.delete("f") and "used by block/coupling" in dialogs.errors[-1][1]
    window.current_view().select_nodes(["blocks"])
    window.current_view().delete_selection()
    assert "block" in window.document.graph.groups  # kept: another node may use it again
    window.groups_menu.aboutToShow.emit()
    entry = window.groups_menu.actions()[0]
    assert entry.text() == "block (unused)"
    delete = next(a for a in entry.menu().actions() if a.text() == "Delete Group")
    assert delete.isEnabled()
    delete.trigger()
    assert "block" not in window.document.graph.groups
    window.document.undo_stack.undo()
    assert "block" in window.document.graph.groups
