"""Ctrl++ / Ctrl+- zoom about the selection when some of it is in view, else about the view's
centre (they zoomed about the centre only: a node selected near an edge drifted out of view)."""
from __future__ import annotations

from PySide6.QtCore import QPointF

from revstudio.core.graph import Graph


def _row(count: int = 6) -> Graph:
    g = Graph("row")
    g.add_node("Input", "x", {"shape": [4, 8, 8]}, (0, 0))
    prev = "x"
    for i in range(count):
        g.add_node("Activation", f"a{i}", {"fn": "relu"}, (220.0 * (i + 1), 0))
        g.connect(f"{prev}.out", f"a{i}.in")
        prev = f"a{i}"
    g.add_node("Output", "y", {}, (220.0 * (count + 1), 0))
    g.connect(f"{prev}.out", "y.in")
    return g


def _on_screen(view, node_id: str) -> QPointF:
    return QPointF(view.mapFromScene(view._scene.node_items[node_id].sceneBoundingRect().center()))


def test_zoom_keys_keep_a_selection_near_the_edge_in_view(shown_view):
    view = shown_view(_row())
    view.select_nodes(["y"])  # the last node, at the right edge of the fitted view
    before = _on_screen(view, "y")
    for _ in range(4):
        view.zoom_in()
    after = _on_screen(view, "y")
    assert view.viewport().rect().contains(after.toPoint())
    assert abs(after.x() - before.x()) <= 3 and abs(after.y() - before.y()) <= 3
    view.zoom_out()
    assert abs(_on_screen(view, "y").x() - before.x()) <= 3


def test_zoom_keys_without_a_selection_in_view_keep_the_centre(shown_view):
    view = shown_view(_row())
    centre = view.mapToScene(view.viewport().rect().center())
    view.zoom_in()
    view.zoom_in()
    moved = view.mapToScene(view.viewport().rect().center()) - centre
    assert abs(moved.x()) <= 3 / view.zoom() and abs(moved.y()) <= 3 / view.zoom()
    view.select_nodes(["x"])
    view.centerOn(view._scene.node_items["y"].sceneBoundingRect().center())  # x scrolled out of view
    centre = view.mapToScene(view.viewport().rect().center())
    view.zoom_in()
    moved = view.mapToScene(view.viewport().rect().center()) - centre
    assert abs(moved.x()) <= 3 / view.zoom() and abs(moved.y()) <= 3 / view.zoom()


def test_the_wheel_still_zooms_about_the_pointer(shown_view, qtbot):
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtGui import QWheelEvent

    view = shown_view(_row())
    view.select_nodes(["y"])
    at = QPointF(view.viewport().rect().center()) - QPointF(200, 0)
    under = view.mapToScene(at.toPoint())
    event = QWheelEvent(at, QPointF(view.viewport().mapToGlobal(at.toPoint())), QPoint(0, 0), QPoint(0, 120),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    view.wheelEvent(event)
    moved = QPointF(view.mapFromScene(under)) - at
    assert abs(moved.x()) <= 3 and abs(moved.y()) <= 3
