"""Every stop the Tab key makes has a name a screen reader can say.

Walking the window with Tab from the Nodes search, with a node selected, reached the inspector's
scroll area, its Batch size field and each of the node's parameter fields with no accessible name (Orca
said "edit", "spin box" or "scroll pane"), and the Add Node popup's field and list likewise.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import QApplication, QWidget

STOPS = 40  # more than the window's Tab stops with a Conv selected (about 20)


def _name(widget: QWidget) -> str:
    face = QAccessible.queryAccessibleInterface(widget)
    return face.text(QAccessible.Text.Name).strip() if face is not None else ""


def _walk(qtbot: Any, settle: Any, start: QWidget, stop: Any) -> list[QWidget]:
    """The widgets Tab gives the keys to from ``start``, until ``stop(widget)`` or back at the start."""
    start.setFocus()
    qtbot.waitUntil(start.hasFocus)
    seen: list[QWidget] = []
    for _ in range(STOPS):
        widget = QApplication.focusWidget()
        assert widget is not None
        if widget in seen or stop(widget):
            break
        seen.append(widget)
        qtbot.keyClick(widget, Qt.Key.Key_Tab)
        settle()
    return seen


def _unnamed(widgets: list[QWidget]) -> list[str]:
    return [f"{type(w).__name__} {w.objectName()!r} ({w.toolTip()[:40]!r})" for w in widgets if not _name(w)]


def test_each_tab_stop_of_the_window_is_named(make_window: Any, qtbot: Any, settle: Any, revnet: Any) -> None:
    window = make_window(revnet)
    window.activateWindow()
    qtbot.waitActive(window)
    view = window.current_view()
    view.select_nodes(["f"])  # a Conv: the inspector shows its parameter fields
    settle()
    stops = _walk(qtbot, settle, window.node_palette.search, lambda w: w is view)
    fields = [w for w in stops if window.inspector.isAncestorOf(w) and w is not window.inspector.title]
    assert len(fields) >= 3, fields  # the walk goes through the Conv's parameter fields
    assert len(stops) >= 8, [type(w).__name__ for w in stops]
    assert not _unnamed(stops), _unnamed(stops)


def test_the_add_node_popup_is_named(make_window: Any, qtbot: Any, settle: Any, revnet: Any) -> None:
    window = make_window(revnet)
    window.activateWindow()
    qtbot.waitActive(window)
    view = window.current_view()
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_A, Qt.KeyboardModifier.ShiftModifier)
    settle()
    field = QApplication.focusWidget()
    assert field is not None and field is not view
    popup = field.window() if field.window() is not window else field.parentWidget()
    parts = [w for w in popup.findChildren(QWidget) if w.isVisible() and w.focusPolicy() != Qt.FocusPolicy.NoFocus]
    assert field in parts
    assert not _unnamed(parts), _unnamed(parts)
    qtbot.keyClick(field, Qt.Key.Key_Escape)


def test_each_tab_stop_of_run_settings_and_preferences_is_named(qtbot: Any, settle: Any) -> None:
    from revstudio.core.graph import Graph
    from revstudio.qt.document import Document
    from revstudio.qt.preferences import PreferencesDialog
    from revstudio.qt.settings import Settings
    from revstudio.qt.training.settings_dialog import RunSettingsDialog

    for dialog in (RunSettingsDialog(Document(Graph())), PreferencesDialog(Settings())):
        qtbot.addWidget(dialog)
        dialog.show()
        dialog.activateWindow()
        qtbot.waitActive(dialog)
        first = dialog.focusWidget() or dialog.nextInFocusChain()
        stops = _walk(qtbot, settle, first, lambda w: False)
        assert len(stops) >= 3
        assert not _unnamed(stops), f"{dialog.windowTitle()}: {_unnamed(stops)}"
        dialog.close()
