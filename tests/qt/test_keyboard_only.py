"""The editor without a mouse: every step of building a network works from the keyboard.

Keys go to whatever has the focus (``QApplication.focusWidget()``), as a person's
keys would; nothing here clicks, drags or calls a slot directly.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

K = Qt.Key
CTRL = Qt.KeyboardModifier.ControlModifier


def _keys(qtbot: Any, settle: Any, *steps: Any) -> None:
    """Each step is text to type, a key, or (key, modifiers), sent to the focused widget."""
    for step in steps:
        target = QApplication.focusWidget()
        assert target is not None, f"nothing has the focus before {step!r}"
        if isinstance(step, str):
            qtbot.keyClicks(target, step)
        elif isinstance(step, tuple):
            qtbot.keyClick(target, *step)
        else:
            qtbot.keyClick(target, step)
        settle()


def _add(qtbot: Any, settle: Any, type_name: str) -> None:
    _keys(qtbot, settle, (K.Key_A, Qt.KeyboardModifier.ShiftModifier), type_name, K.Key_Return)


def _select(qtbot: Any, settle: Any, node_id: str) -> None:
    _keys(qtbot, settle, (K.Key_F, CTRL), node_id, K.Key_Return)


def _connect(qtbot: Any, settle: Any, text: str) -> None:
    _keys(qtbot, settle, (K.Key_K, CTRL), text, K.Key_Return)


def test_tab_walks_the_inspector_fields_top_to_bottom_one_stop_each(make_window: Any, qtbot: Any, settle: Any,
                                                                     revnet: Any) -> None:
    window = make_window(revnet)
    window.current_view().select_nodes(["f"])
    settle()
    inspector = window.inspector
    inspector.title.setFocus()
    settle()
    seen = []
    for _ in range(len(inspector.editors)):
        _keys(qtbot, settle, K.Key_Tab)
        seen.append(next((n for n, e in inspector.editors.items() if e.isAncestorOf(QApplication.focusWidget())),
                         type(QApplication.focusWidget()).__name__))
    assert seen == list(inspector.editors)  # out_channels, kernel_size, ... as shown, no empty stops
