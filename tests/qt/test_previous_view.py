"""Views are no undo steps (as in Blender and Qt Creator): Ctrl+Z after Ctrl+L puts the nodes back
and leaves the view where the layout framed them. Before, nothing took the user back to where they
were looking: View > Previous View (Shift+Home) now goes back through the views that Fit, Ctrl+L and
a Problem's or a search's click left."""
from __future__ import annotations

from PySide6.QtCore import QPointF, Qt

from revstudio.core.generate import large_graph


def _state(view) -> tuple[float, float, float]:
    c = view.mapToScene(view.viewport().rect().center())
    return round(view.zoom(), 4), c.x(), c.y()


def _same(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    """The same view, to the two screen pixels a centring rounds to."""
    slack = 2.0 / a[0]
    return a[0] == b[0] and abs(a[1] - b[1]) <= slack and abs(a[2] - b[2]) <= slack


def test_previous_view_returns_to_where_the_user_was_before_a_layout_and_its_undo(make_window, settle, qtbot):
    w = make_window(large_graph(100))
    view, doc = w.current_view(), w.document
    settle()
    first = next(iter(doc.graph.nodes))
    view.resetTransform()
    view.scale(0.9, 0.9)
    view.centerOn(QPointF(*doc.graph.node(first).pos))
    where = _state(view)
    positions = {k: n.pos for k, n in doc.graph.nodes.items()}
    view.select_nodes([])
    action = w.actions_by_name["previous_view"]
    assert action.shortcut().toString() == "Shift+Home"
    assert action in w.menuBar().actions()[2].menu().actions()  # the View menu
    w.actions_by_name["layout"].trigger()  # Ctrl+L: laid out, and the whole graph shown
    settle()
    assert not _same(_state(view), where)
    doc.undo_stack.undo()  # the nodes go back; the view is no undo step
    settle()
    assert {k: n.pos for k, n in doc.graph.nodes.items()} == positions
    assert not _same(_state(view), where)
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_Home, Qt.KeyboardModifier.ShiftModifier)  # the key, on the canvas
    assert _same(_state(view), where)
    action.trigger()  # nothing further back
    assert "No previous view" in w.status_bar.currentMessage()
    assert _same(_state(view), where)


def test_previous_view_goes_back_through_fits_and_a_search(make_window, settle):
    w = make_window(large_graph(100))
    view = w.current_view()
    settle()
    view.resetTransform()
    view.scale(1.0, 1.0)
    view.centerOn(0, 0)
    start = _state(view)
    view.fit_all()
    fitted = _state(view)
    node = list(w.document.graph.nodes)[-1]
    view.reveal_node(node)
    assert not _same(_state(view), start) and not _same(_state(view), fitted)
    assert view.previous_view() and _same(_state(view), fitted)
    assert view.previous_view() and _same(_state(view), start)
    assert not view.previous_view()
