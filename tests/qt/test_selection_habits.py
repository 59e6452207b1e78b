"""Selection habits: Shift+click adds, Ctrl+click toggles; a shared parameter of several
selected nodes of one type is edited in the inspector as one undoable Macro."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from revstudio.core.graph import Graph


def three_convs() -> Graph:
    g = Graph("convs")
    g.add_node("Input", "x", {"shape": [4, 8, 8]}, (0, 0))
    for i, k in enumerate(("a", "b", "c")):
        g.add_node("Conv", k, {"out_channels": 4, "kernel_size": 3, "padding": "same"}, (250 * (i + 1), 0))
    g.add_node("Output", "y", {}, (1000, 0))
    for s, d in (("x.out", "a.in"), ("a.out", "b.in"), ("b.out", "c.in"), ("c.out", "y.in")):
        g.connect(s, d)
    return g


def _click(view, node_id, modifier=Qt.KeyboardModifier.NoModifier):
    item = view.scene().node_items[node_id]
    point = view.mapFromScene(item.mapToScene(60, 50))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, modifier, point)


def test_shift_click_adds_and_ctrl_click_toggles(make_window, settle):
    window = make_window(three_convs())
    view = window.current_view()
    view.fit_all()
    view.resetTransform()
    view.centerOn(view.scene().node_items["b"])
    settle()
    _click(view, "a")
    _click(view, "b", Qt.KeyboardModifier.ShiftModifier)
    assert sorted(view.selected_node_ids()) == ["a", "b"]
    _click(view, "b", Qt.KeyboardModifier.ShiftModifier)  # Shift never removes
    assert sorted(view.selected_node_ids()) == ["a", "b"]
    _click(view, "b", Qt.KeyboardModifier.ControlModifier)
    assert view.selected_node_ids() == ["a"]
    _click(view, "c")
    assert view.selected_node_ids() == ["c"]


def test_a_shared_parameter_is_one_undoable_edit(make_window, settle):
    window = make_window(three_convs())
    view = window.current_view()
    view.select_nodes(["a", "b", "c"])
    settle()
    inspector = window.inspector
    assert "out_channels" in inspector.editors
    assert "3 × Conv" in inspector.type_label.text()
    count = window.document.undo_stack.count()
    inspector.editors["out_channels"].committed.emit(8)
    settle()
    g = window.document.graph
    assert [g.node(n).params["out_channels"] for n in "abc"] == [8, 8, 8]
    assert window.document.undo_stack.count() == count + 1
    assert window.document.undo_stack.text(count) == "Set out_channels on 3 Conv nodes"
    window.document.undo_stack.undo()
    assert [g.node(n).params["out_channels"] for n in "abc"] == [4, 4, 4]


def test_mixed_types_show_no_shared_editors(make_window, settle):
    window = make_window(three_convs())
    window.current_view().select_nodes(["a", "x"])
    settle()
    assert window.inspector.editors == {}


def test_several_selected_nodes_show_their_own_figures_not_the_projects(make_window, settle):
    window = make_window(three_convs())
    view = window.current_view()
    view.select_nodes(["a", "b"])
    settle()
    facts = window.inspector.facts.text()
    report = window.document.report
    own = sum(int(report.nodes[n].parameters) for n in "ab")
    assert "2 Conv" in facts and f"{own:,}" in facts
    assert f"{int(report.parameters):,}" not in facts  # the project's total (three convs) is not shown
    assert "Kept (standard)" in facts and "Nodes" not in facts
    view.select_nodes([])
    settle()
    assert f"{int(report.parameters):,}" in window.inspector.facts.text()  # the project again


def test_tab_moves_the_focus_onto_the_canvas_and_shift_tab_leaves_it(make_window, revnet, qtbot, settle):
    """Keyboard only: Tab from the status bar's batch field stopped on the canvas tab bar for good
    (Tab there fired Open Group instead of moving on), and nothing led out of the canvas."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    window = make_window(revnet)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    view = window.current_view()
    window.status_batch.setFocus()
    settle()
    for _ in range(3):
        if QApplication.focusWidget() is view:
            break
        QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        settle()
    assert QApplication.focusWidget() is view
    QTest.keyClick(view, Qt.Key.Key_Backtab, Qt.KeyboardModifier.ShiftModifier)
    settle()
    assert QApplication.focusWidget() is not view and window.isAncestorOf(QApplication.focusWidget())
    view.setFocus()
    view.select_nodes([])
    QTest.keyClick(view, Qt.Key.Key_Tab)  # Tab itself still belongs to the canvas (quick add / open group)
    settle()
    popup = QApplication.activePopupWidget()
    assert popup is not None
    popup.close()


def test_the_selection_is_listed_in_the_canvas_order_however_it_was_made(make_window, settle):
    # Qt keeps the selection in a hashed set that it rebuilds lazily: two calls in a row could list
    # the same nodes in different orders (the rubber-band announcement test compared them and flaked)
    from revstudio.core.generate import large_graph

    w = make_window(large_graph(60))
    view = w.current_view()
    items = view.scene().node_items
    order = list(items)
    for node_id in reversed(order):  # selected back to front, with churn in between
        items[node_id].setSelected(True)
    for node_id in order[::3]:
        items[node_id].setSelected(False)
    for node_id in order[::6]:
        items[node_id].setSelected(True)
    settle()
    expected = [n for n in order if items[n].isSelected()]
    assert view.selected_node_ids() == expected
    assert view.selected_node_ids() == expected
