"""The pyqtgraph widget inside each plot: it times its paints and frames itself when it has the focus.

A frame must budget paints as well as data updates, so the widget remembers what its last paint
cost. Focused (Tab, or a click), the arrow keys read the plot out (plot_keys.py): a 2 px frame in
the theme's hover colour says where the keys go, as the canvas shows its own (canvas/view.py).
"""
from __future__ import annotations

import time
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QRect, QRectF, Qt
from PySide6.QtGui import QFocusEvent, QPainter, QPen

from revstudio.qt import theme
from revstudio.qt.canvas.theme import FOCUS_FRAME, theme_for


class PlotWidget(pg.PlotWidget):
    """A PlotWidget with a focus frame that remembers what its last paint cost."""

    paint_ms = 0.0

    def paintEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        t0 = time.thread_time()  # CPU: on a loaded machine waiting for a core is not the plot's cost
        super().paintEvent(event)
        self.paint_ms = (time.thread_time() - t0) * 1000

    def drawForeground(self, painter: QPainter, rect: QRectF | QRect) -> None:  # noqa: N802 - Qt API
        super().drawForeground(painter, rect)
        if self.hasFocus():
            painter.save()
            painter.resetTransform()
            # the colour is read at paint time, so a theme switch needs no restyle
            painter.setPen(QPen(theme_for(theme.current() == "dark").hover, FOCUS_FRAME))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(QRectF(self.viewport().rect()).adjusted(1, 1, -1, -1))
            painter.restore()

    def focusInEvent(self, event: QFocusEvent) -> None:  # noqa: N802 - Qt API
        super().focusInEvent(event)
        self.viewport().update()  # the whole frame, not only what changed last

    def focusOutEvent(self, event: QFocusEvent) -> None:  # noqa: N802 - Qt API
        super().focusOutEvent(event)
        self.viewport().update()
