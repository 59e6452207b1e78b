"""A label that shortens its sentence to fit its width (a plot's note and hover read-out)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget


class FittedLabel(QLabel):
    """A label that shows the longest of its texts that fits its width (the last one elided).

    The memory plot's "peak 29 % of standard's" becomes "29 % of standard's",
    then "29 %" as the plot narrows, instead of being cut mid-word; the
    tooltip keeps the whole sentence.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts: list[str] = []
        self.setMinimumWidth(0)
        # up to its whole text, shrinking (to the shorter texts) only when the row is short of room
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Preferred)

    def set_texts(self, texts: Sequence[str]) -> None:
        """The texts from the longest to the shortest (an empty list clears the label)."""
        texts = [t for t in texts if t]
        if texts == self.texts:
            return
        longest = texts[:1] != self.texts[:1]
        self.texts = texts
        if longest:  # a new size hint: the row may give it more room; fit once it has been laid out
            self.setText(self.full_text())
            self.updateGeometry()
            QTimer.singleShot(0, self, self._fit)
        else:
            self._fit()

    def full_text(self) -> str:
        return self.texts[0] if self.texts else ""

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        hint = super().sizeHint()
        metrics = self.fontMetrics()
        return QSize(metrics.horizontalAdvance(self.full_text()) + 4, hint.height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(0, super().minimumSizeHint().height())

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        metrics, room = self.fontMetrics(), self.width()
        shown = next((t for t in self.texts if metrics.horizontalAdvance(t) <= room), None)
        if shown is None:
            shown = metrics.elidedText(self.texts[-1], Qt.TextElideMode.ElideRight, room) if self.texts else ""
        if shown != super().text():
            self.setText(shown)
