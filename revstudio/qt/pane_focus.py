"""F6 / Shift+F6: move the keyboard focus from pane to pane, as in most desktop applications.

Tab walks the widgets inside a pane (and on the canvas Tab adds a node), so a
keyboard user needs a way to jump between the window's parts: the Nodes palette,
the canvas, the Inspector, History and the Output tabs, in the order they read
left to right and top to bottom. Hidden panels are skipped.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QWidget

if TYPE_CHECKING:  # pragma: no cover
    from revstudio.qt.main_window import MainWindow


def panes(window: MainWindow) -> list[tuple[QWidget, QWidget]]:
    """(pane, the widget that takes the focus on arriving there), for the visible panes in order."""
    view = window.current_view()
    pairs: list[tuple[QWidget, QWidget]] = [
        (window.palette_dock, window.node_palette.search),
        (window.tabs, view),
        (window.inspector_dock, window.inspector.title),
        (window.history_dock, window.history),
        (window.bottom_dock, window.bottom.tabBar()),
    ]
    return [(pane, target) for pane, target in pairs if pane.isVisible()]


def _first_focusable(widget: QWidget) -> QWidget:
    """``widget`` if Tab can focus it, else the first child in its focus chain that can."""
    candidate: QWidget | None = widget
    for _ in range(500):  # the chain is a ring: stop once it leaves the pane
        if candidate is None:
            break
        if (candidate.isVisible() and candidate.isEnabled()
                and candidate.focusPolicy() & Qt.FocusPolicy.TabFocus
                and (candidate is widget or widget.isAncestorOf(candidate))):
            return candidate
        candidate = candidate.nextInFocusChain()
        if candidate is widget:
            break
    return widget


def cycle(window: MainWindow, step: int) -> QWidget | None:
    """Focus the next (``step`` 1) or previous (-1) pane after the one holding the focus."""
    order = panes(window)
    if not order:
        return None
    focus = QApplication.focusWidget()
    here = next((i for i, (pane, _t) in enumerate(order)
                 if focus is not None and (focus is pane or pane.isAncestorOf(focus))), None)
    index = (here + step) % len(order) if here is not None else (0 if step > 0 else len(order) - 1)
    target = _first_focusable(order[index][1])
    target.setFocus(Qt.FocusReason.TabFocusReason if step > 0 else Qt.FocusReason.BacktabFocusReason)
    return target
