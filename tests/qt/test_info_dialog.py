"""A message (Help > Keyboard Shortcuts, About) fits a small screen and scrolls from the keyboard.

The shortcuts list came in a QMessageBox as tall as its text: 613 points on a 1280x800 screen at 150 %
(533 points free), its OK button past the screen's bottom edge.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QRect, Qt, QTimer
from PySide6.QtGui import QScreen
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QPushButton

from revstudio.qt.dialogs import Dialogs
from revstudio.qt.fit_scroll import FRAME
from revstudio.qt.shortcuts_help import shortcuts_html

SCREEN = QRect(0, 0, 853, 533)  # 1280x800 at 150 %


def _shown_by_info(qtbot: Any, parent: Any, text: str) -> dict[str, Any]:
    """What Dialogs.info shows (read while it is open, then closed with Enter)."""
    seen: dict[str, Any] = {}

    def look() -> None:
        box = QApplication.activeModalWidget()
        if box is None:
            QTimer.singleShot(20, look)
            return
        seen["size"] = box.size()  # (FRAME is the room left for the frame and title bar)
        ok = next(b for b in box.findChildren(QPushButton) if b.isVisible())
        seen["ok inside"] = box.rect().contains(QRect(ok.mapTo(box, ok.rect().topLeft()), ok.size()))
        seen["box"] = box
        box.accept() if hasattr(box, "accept") else box.close()

    QTimer.singleShot(50, look)
    Dialogs().info(parent, "Keyboard shortcuts", text)
    return seen


def test_the_shortcuts_list_fits_a_small_screen(make_window: Any, qtbot: Any, monkeypatch: Any) -> None:
    window = make_window()
    monkeypatch.setattr(QScreen, "availableGeometry", lambda _self: SCREEN)
    seen = _shown_by_info(qtbot, window, shortcuts_html(window.actions_by_name))
    size = seen["size"]
    assert size.width() <= SCREEN.width() - FRAME.width() and size.height() <= SCREEN.height() - FRAME.height(), size
    assert seen["ok inside"]


def test_a_long_message_scrolls_from_the_keyboard(qtbot: Any, monkeypatch: Any) -> None:
    from revstudio.qt.info_dialog import InfoDialog

    monkeypatch.setattr(QScreen, "availableGeometry", lambda _self: SCREEN)
    text = "<br>".join(f"line {i}" for i in range(80))
    dialog = InfoDialog(None, "Long", text)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.activateWindow()
    qtbot.waitActive(dialog)
    qtbot.wait(50)
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert ok.hasFocus()  # Enter closes it, as a message box's OK
    bar = dialog.area.verticalScrollBar()
    assert bar.maximum() > 0
    qtbot.keyClick(ok, Qt.Key.Key_Tab)
    assert dialog.area.hasFocus()
    assert dialog.area.accessibleName() == "Long"
    qtbot.keyClick(dialog.area, Qt.Key.Key_PageDown)
    assert bar.value() > 0
