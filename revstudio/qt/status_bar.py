"""The status bar: a message on the left that ends in "…" where it does not fit, and the
permanent figures (parameters, problems, batch, memory) on the right.

QStatusBar paints a temporary message itself and cuts it mid-word at the first permanent
widget; here the message is a label in the bar's own layout, so the figures never cover it,
and a message too long for its room is elided with its whole text in the tooltip (and in the
Log, where the window writes every message). ``showMessage`` / ``currentMessage`` /
``clearMessage`` / ``messageChanged`` keep QStatusBar's meaning.
"""
from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QStatusBar, QWidget

from revstudio.qt.memory_figures import ElidedLabel

_NO_LIMIT = (1 << 24) - 1  # Qt's QWIDGETSIZE_MAX, which PySide6 does not export


class MessageStatusBar(QStatusBar):
    """A status bar whose messages are laid out beside the permanent widgets, never under them."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.message_label = ElidedLabel()
        self.message_label.setObjectName("statusMessage")
        self.addPermanentWidget(self.message_label, 1)  # first and stretching: the figures sit right of it
        self.figures: list[QWidget] = []
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.clearMessage)

    def showMessage(self, text: str, timeout: int | None = 0) -> None:  # noqa: N802 - Qt API
        if timeout:
            self._timer.start(timeout)
        else:
            self._timer.stop()
        if text == self.message_label.text():
            return
        self.message_label.setText(text)
        self._fit_message()
        self.messageChanged.emit(text)

    def currentMessage(self) -> str:  # noqa: N802 - Qt API
        return self.message_label.text()

    def clearMessage(self) -> None:  # noqa: N802 - Qt API
        self.showMessage("")

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._fit_message()

    def _fit_message(self) -> None:
        """Room for the whole message where the figures can give way: the memory summary (an
        ElidedLabel figure) is capped to what the message leaves and ends in "…", down to its
        few words. Only a maximum is set, so the window can still be made as small as before."""
        label = self.message_label
        text = label.text()
        shrinkable = [w for w in self.figures if isinstance(w, ElidedLabel) and w.isVisible()]
        if not text or not shrinkable:
            for w in shrinkable:
                w.setMaximumWidth(_NO_LIMIT)
            return
        label.ensurePolished()  # the theme's font and padding, not the defaults, measure the text
        layout = self.layout()
        gap = layout.spacing() if layout is not None and layout.spacing() > 0 else 6
        fixed = sum(w.width() + gap + 8 for w in self.figures if w.isVisible() and w not in shrinkable)
        padding = label.width() - label.contentsRect().width()
        want = label.fontMetrics().horizontalAdvance(text) + padding + gap + 8
        spare = (self.width() - 24 - fixed - want) // len(shrinkable)
        for w in shrinkable:
            w.setMaximumWidth(max(ElidedLabel.MIN_WIDTH, spare) if spare < w.sizeHint().width() else _NO_LIMIT)

    def add_figure(self, widget: QWidget, first: bool = False) -> None:
        """A permanent widget right of the message (``first``: before the other figures)."""
        if first:
            self.insertPermanentWidget(1, widget)
            self.figures.insert(0, widget)
        else:
            self.addPermanentWidget(widget)
            self.figures.append(widget)
