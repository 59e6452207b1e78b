"""The first minutes: a blank canvas says how to begin, a new project has nothing to warn
about, examples open from "New from Example", and dragged positions are whole pixels."""
from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from revstudio.core.graph import Graph


def _hint_pixels(view) -> int:
    image = view.viewport().grab().toImage()
    color = view.scene().theme.node_subtext
    n = 0
    cy = image.height() // 2
    for y in range(cy - 30, cy + 40):
        for x in range(0, image.width(), 2):
            p = image.pixelColor(x, y)
            if abs(p.red() - color.red()) + abs(p.green() - color.green()) + abs(p.blue() - color.blue()) < 60:
                n += 1
    return n


def test_a_blank_canvas_shows_how_to_begin_and_the_hint_goes_with_the_first_node(make_window, settle):
    window = make_window()
    view = window.current_view()
    settle()
    assert _hint_pixels(view) > 80
    view.add_node_at("Input", (0.0, 0.0))
    view.viewport().repaint()
    settle()
    view.resetTransform()
    view.centerOn(2000, 2000)  # look at empty space: no hint once the graph has a node
    view.viewport().repaint()
    assert _hint_pixels(view) < 10


def test_a_new_project_has_nothing_to_warn_about(make_window, settle):
    window = make_window()
    settle()
    assert window.status_warnings.text() == "▲ 0 warnings"
    assert window.diagnostics.row_count() == 0


def test_examples_are_under_new_from_example(make_window):
    window = make_window()
    assert window.examples_menu.title().replace("&", "") == "New from Example"
    assert window.examples_menu.actions()


def test_a_dragged_node_lands_on_whole_pixels(make_window, settle):
    g = Graph("drag")
    g.add_node("Input", "x", {"shape": [3]}, (0, 0))
    window = make_window(g)
    view = window.current_view()
    view.resetTransform()
    view.scale(0.77, 0.77)  # a zoom at which one screen pixel is a fraction of a scene unit
    view.centerOn(80, 30)
    settle()
    item = view.scene().node_items["x"]
    start = view.mapFromScene(item.mapToScene(60, 10))
    vp = view.viewport()
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for k in range(1, 6):
        QTest.mouseMove(vp, start + QPoint(7 * k, 3 * k))
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start + QPoint(35, 15))
    settle()
    x, y = window.document.graph.node("x").pos
    assert (x, y) != (0.0, 0.0)
    assert x == round(x) and y == round(y)


def test_scrolling_a_blank_canvas_repaints_the_hint_whole(make_window, settle, qtbot):
    """Scrolling blits the old pixels and repaints only the strip it exposes; the hint is fixed
    to the viewport, so a partial repaint drew it twice. The whole viewport must repaint."""
    from PySide6.QtCore import QEvent, QObject

    window = make_window()
    view = window.current_view()
    settle()
    painted = []

    class Spy(QObject):
        def eventFilter(self, obj, event):  # noqa: N802
            if event.type() == QEvent.Type.Paint:
                painted.append(event.region().boundingRect())
            return False

    spy = Spy()
    view.viewport().installEventFilter(spy)
    try:
        bar = view.horizontalScrollBar()
        painted.clear()
        bar.setValue(bar.value() + 40)
        qtbot.waitUntil(lambda: bool(painted), timeout=2000)
        settle()
        assert any(r.contains(view.viewport().rect()) for r in painted), painted
    finally:
        view.viewport().removeEventFilter(spy)



def _all_hint_pixels(view) -> int:
    image = view.viewport().grab().toImage()
    color = view.scene().theme.node_subtext
    n = 0
    for y in range(image.height()):
        for x in range(image.width()):
            p = image.pixelColor(x, y)
            if abs(p.red() - color.red()) + abs(p.green() - color.green()) + abs(p.blue() - color.blue()) < 60:
                n += 1
    return n


def test_the_blank_canvas_hint_wraps_in_a_narrow_canvas(make_window, settle, qtbot):
    """At 800x600 the canvas is ~250 px wide and the one-line hint was cut at both edges."""
    window = make_window()
    window.resize(1600, 900)
    qtbot.wait(50)
    settle()
    view = window.current_view()
    whole = _all_hint_pixels(view)
    window.resize(800, 600)
    qtbot.wait(50)
    settle()
    assert view.viewport().width() < 400
    assert _all_hint_pixels(view) > 0.85 * whole  # all of it is drawn, on more lines
