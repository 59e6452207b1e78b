"""A word-wrapped label as tall as its text is at the width the layout gives it.

``QLabel`` with word wrap hints the height its text takes at a guessed width (about 300 pixels), and
layouts that do not ask for height-for-width (a form in a scroll area, a dialog growing to its content)
gave a long message that height at twice the width: empty lines above and below it, and a dialog taller
than its screen.
"""
from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QWidget


class WrapLabel(QLabel):
    """A ``QLabel`` that wraps its words and, once laid out, hints the height of its text at its width."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setWordWrap(True)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        hint = super().sizeHint()
        width = self.width()
        if not self.wordWrap() or width <= hint.width():  # (not laid out yet, or narrower than Qt's guess)
            return hint
        return QSize(hint.width(), self.heightForWidth(width))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        if self.wordWrap() and event.size().width() != event.oldSize().width():
            self.updateGeometry()  # (the hint depends on the width: the layout asks again)
