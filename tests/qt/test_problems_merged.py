"""A problem merged over several nodes (one plugin-swap warning for every node using the type)
says in the Problems tab where it is, all of it, and a click frames every one of those nodes."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from revstudio.core.diagnostics import warning
from revstudio.core.generate import large_graph


def test_a_merged_warning_names_its_nodes_and_activating_it_selects_and_frames_them_all(make_window, settle):
    w = make_window(large_graph(120))
    settle()
    ids = list(w.document.graph.nodes)
    # far apart: the first's neighbourhood at reading zoom leaves the others off screen
    nodes = [ids[1], ids[2], ids[len(ids) // 2], ids[-3], ids[-1]]
    merged = warning(nodes[0], "type 'X' is now provided by another plugin; 5 nodes use it", also=tuple(nodes))
    w.document.report.diagnostics = [merged]
    w.diagnostics.refresh()
    tree = w.diagnostics.tree
    assert tree.topLevelItemCount() == 1
    row = tree.topLevelItem(0)
    assert row.text(1) == f"{nodes[0]}, {nodes[1]} and 3 more"
    assert all(n in row.toolTip(1) for n in nodes), row.toolTip(1)
    # a Where that wraps in its column makes the row tall enough for all of it ("and 3 ..." was cut)
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QFontMetrics

    tree.setColumnWidth(1, 120)
    tree.doItemsLayout()
    settle()
    need = QFontMetrics(tree.font()).boundingRect(QRect(0, 0, 120 - 10, 10000), Qt.TextFlag.TextWordWrap, row.text(1))
    assert need.height() > QFontMetrics(tree.font()).height()  # it does wrap at this width
    assert tree.visualItemRect(row).height() >= need.height(), (tree.visualItemRect(row).height(), need.height())

    w.current_view().resetTransform()  # zoomed in far from them all
    w.current_view().centerOn(-5000, -5000)
    tree.setFocus()
    tree.setCurrentItem(row)
    QTest.keyClick(tree.viewport(), Qt.Key.Key_Return)
    settle()
    view = w.current_view()
    assert sorted(view.selected_node_ids()) == sorted(nodes)
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    items = view.scene().node_items
    off = [n for n in nodes if not shown.contains(items[n].sceneBoundingRect())]
    assert not off, f"{off} are selected but off screen"


def test_two_or_three_nodes_are_all_named():
    from revstudio.qt.diagnostics_panel import where_text

    assert where_text(["a", "b"]) == "a and b"
    assert where_text(["a", "b", "c"]) == "a, b and c"
    assert where_text(["a", "b", "c", "d"]) == "a, b and 2 more"
