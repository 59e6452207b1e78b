"""A group's tab follows the edits that take its body away and the undo that brings it back: ungroup
(or undo the grouping) closes it, and undoing that reopens it, titled with the group's name, so the
tabs after an undo are the tabs before the edit. Before, the undo left the tab closed."""
from __future__ import annotations

from pathlib import Path

from revstudio.core.project import load

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_wired.revs"
F = ["block0_f_conv1", "block0_f_relu", "block0_f_conv2"]


def _titles(window) -> list[str]:
    return [window.tabs.tabText(i) for i in range(window.tabs.count())]


def _grouped(make_window, settle):
    window = make_window(load(str(EXAMPLE)))
    window.current_view().select_nodes(F)
    assert window.tabs.group_selection()
    node = window.current_view().selected_node_ids()[0]
    group = window.document.graph.nodes[node].params["group"]
    settle()
    return window, node, group


def test_ungroup_closes_the_groups_tab_and_undo_reopens_it(make_window, settle):
    window, node, group = _grouped(make_window, settle)
    tabs, stack = window.tabs, window.document.undo_stack
    assert tabs.open_group(group)
    tabs.setCurrentIndex(0)
    window.current_view().select_nodes([node])
    assert tabs.ungroup_selection()
    assert group not in window.document.graph.groups
    assert _titles(window)[1:] == []  # no tab for a group that is gone
    stack.undo()
    assert _titles(window)[1:] == [group]  # the undo brings the group and its tab back
    assert tabs._groups[group].graph is window.document.graph.groups[group]  # showing the live body
    stack.redo()
    assert _titles(window)[1:] == []
    stack.undo()
    assert _titles(window)[1:] == [group]


def test_undoing_the_grouping_closes_its_tab_and_redo_reopens_it(make_window, settle):
    window, _node, group = _grouped(make_window, settle)
    tabs, stack = window.tabs, window.document.undo_stack
    assert tabs.open_group(group)
    assert tabs.current_group() == group
    stack.undo()
    assert _titles(window)[1:] == [] and tabs.currentIndex() == 0
    stack.redo()
    assert _titles(window)[1:] == [group]
    assert tabs.current_graph() is window.document.graph.groups[group]  # it had the focus: it has it again


def test_deleting_the_group_node_keeps_the_groups_tab_while_the_group_is_in_the_project(make_window, settle):
    """Deleting the Group node leaves its body among the project's groups (a Repeat or another Group
    node may name it): its tab stays, the same before and after the undo."""
    window, node, group = _grouped(make_window, settle)
    tabs, stack = window.tabs, window.document.undo_stack
    assert tabs.open_group(group)
    tabs.setCurrentIndex(0)
    window.current_view().select_nodes([node])
    window.current_view().delete_selection()
    assert node not in window.document.graph.nodes and group in window.document.graph.groups
    assert _titles(window)[1:] == [group]
    stack.undo()
    assert _titles(window)[1:] == [group]
    assert tabs._groups[group].graph is window.document.graph.groups[group]


def test_a_new_file_drops_group_tabs_for_good(make_window, settle):
    window, _node, group = _grouped(make_window, settle)
    assert window.tabs.open_group(group)
    window.document.replace_graph(load(str(EXAMPLE)))
    settle()
    assert _titles(window)[1:] == []
