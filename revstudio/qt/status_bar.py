"""The status bar: a message on the left that ends in "…" where it does not fit, and the
permanent figures (parameters, problems, batch, memory) on the right, which keep their width
while a message shows.

QStatusBar paints a temporary message itself and cuts it mid-word at the first permanent
widget; here the message is a label in the bar's own layout, so the figures never cover it.
The label asks for no room of its own (its size hint is its least width): it takes what the
figures leave, and a message too long for that is elided with its whole text in the tooltip
(and in the Log, where the window writes every message). A long message once squeezed the
memory figure to "…" while it showed. ``showMessage`` / ``currentMessage`` /
``clearMessage`` / ``messageChanged`` keep QStatusBar's meaning.
"""
from __future__ import annotations

from PySide6.QtCore import QSize, QTimer
from PySide6.QtWidgets import QStatusBar, QWidget

from revstudio.qt.memory_figures import ElidedLabel


class MessageLabel(ElidedLabel):
    """The message: it stretches into the room the figures leave and never asks for more, so a
    long message ends in "…" rather than squeezing the figures (QBoxLayout shrinks every item
    that wants more than it gets, the figures with it)."""

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(self.minimumSizeHint().width(), super().sizeHint().height())


class MessageStatusBar(QStatusBar):
    """A status bar whose messages are laid out beside the permanent widgets, never under them."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.message_label = MessageLabel()
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
        self.messageChanged.emit(text)

    def currentMessage(self) -> str:  # noqa: N802 - Qt API
        return self.message_label.text()

    def clearMessage(self) -> None:  # noqa: N802 - Qt API
        self.showMessage("")

    def add_figure(self, widget: QWidget, first: bool = False) -> None:
        """A permanent widget right of the message (``first``: before the other figures)."""
        if first:
            self.insertPermanentWidget(1, widget)
            self.figures.insert(0, widget)
        else:
            self.addPermanentWidget(widget)
            self.figures.append(widget)
