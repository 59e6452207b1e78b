"""Edit > Unroll Repeat (and a Repeat node's context menu): its copies as Group nodes, selected.

Ungroup on a Repeat said only that it unpacks Group nodes; now it names Unroll Repeat, which turns
the Repeat into Group nodes that Ungroup (or an edit of one copy's group) then works on.
"""
from __future__ import annotations

from PySide6.QtWidgets import QMenu


def test_unroll_repeat_from_the_edit_menu_selects_the_copies_and_one_ungroups(make_window, grouped_stack):
    g, gid = grouped_stack  # x -> [c, a] as group 'block' -> y
    window = make_window(g)
    view = window.tabs.current_view()
    view.select_nodes([gid])
    assert window.tabs.repeat_selected_group()
    g.set_param(gid, "times", 3)
    edit = window.menuBar().actions()[1].menu()
    assert window.actions_by_name["unroll_repeat"] in edit.actions()
    window.actions_by_name["unroll_repeat"].trigger()
    copies = [gid, f"{gid}_2", f"{gid}_3"]
    assert sorted(view.selected_node_ids()) == sorted(copies)
    assert [g.nodes[n].type for n in copies] == ["Group"] * 3
    assert window.status_bar.currentMessage().startswith(f"Unrolled {gid} into 3 Group nodes")
    assert not [d for d in window.document.report.diagnostics if d.severity == "error"]
    assert window.document.undo_stack.text(window.document.undo_stack.count() - 1) == \
        f"Unroll {gid} into 3 Group nodes"
    view.select_nodes([f"{gid}_3"])
    assert window.tabs.ungroup_selection()  # the last copy, unpacked alone
    assert f"{gid}_3" not in g.nodes and g.nodes[f"{gid}_2"].type == "Group"


def test_a_repeat_nodes_context_menu_offers_unroll_and_other_nodes_do_not(make_window, grouped_stack):
    g, gid = grouped_stack
    window = make_window(g)
    view = window.tabs.current_view()
    view.select_nodes([gid])
    window.tabs.repeat_selected_group()

    def items(node_id: str) -> list[str]:
        menu = QMenu()
        window.tabs._extend_menu(menu, node_id)
        return [a.text() for a in menu.actions()]

    assert "Unroll Repeat" in items(gid)
    assert "Unroll Repeat" not in items("x")
    view.select_nodes(["x"])
    assert not window.tabs.unroll_selected_repeat()
    assert window.status_bar.currentMessage() == "Select a Repeat node to unroll it into Group nodes"
