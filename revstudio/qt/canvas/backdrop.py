"""What the canvas draws behind and over its items, by zoom: the grid and the empty-canvas hint.

The grid thins out as one zooms out (the minor lines go below 0.6, the major
ones below 0.15) so a far view stays readable and cheap to paint; an empty
canvas says how to begin, in screen pixels at every zoom.
"""
from __future__ import annotations

from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QPainter, QPen

from .theme import Theme

EMPTY_HINT = "Drag a node here from the Nodes panel, or press Shift+A"
EMPTY_HINT_MORE = "Double-click to search for a node  ·  File ▸ New from Example opens a ready-made network"
GRIDS = ((20.0, "grid_minor", 0.6), (100.0, "grid_major", 0.15))  # (step, theme colour, shown from zoom)


def draw_grid(painter: QPainter, rect: QRectF, theme: Theme, zoom: float) -> None:
    """The background and the grid lines that help at ``zoom`` over scene ``rect``."""
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)  # crisp and ~10x cheaper
    painter.fillRect(rect, theme.background)
    for step, color, min_zoom in GRIDS:
        if zoom < min_zoom:
            continue  # too dense to help, and costly
        pen = QPen(getattr(theme, color), 1.0)
        pen.setCosmetic(True)
        painter.setPen(pen)
        left = rect.left() - rect.left() % step
        top = rect.top() - rect.top() % step
        # one drawLines call per grid: per-line calls dominate a drag frame otherwise
        count_x = int((rect.right() - left) / step) + 1
        count_y = int((rect.bottom() - top) / step) + 1
        lines = [QLineF(left + i * step, rect.top(), left + i * step, rect.bottom()) for i in range(count_x)]
        lines += [QLineF(rect.left(), top + j * step, rect.right(), top + j * step) for j in range(count_y)]
        painter.drawLines(lines)


def draw_empty_hint(painter: QPainter, area: QRectF, theme: Theme) -> None:
    """How to begin, centred in the viewport ``area`` (the first thing a new user needs to know).

    Both lines wrap in a narrow canvas (an 800x600 window) rather than being cut at the sides.
    """
    painter.save()
    painter.resetTransform()
    box = area.adjusted(20, 0, -20, 0)
    flags = Qt.AlignmentFlag.AlignHCenter | Qt.TextFlag.TextWordWrap
    big, small = QFont(painter.font()), QFont(painter.font())
    big.setPointSizeF(13.0)
    small.setPointSizeF(10.0)
    lines = [(font, text, QFontMetricsF(font).boundingRect(box, flags, text))
             for font, text in ((big, EMPTY_HINT), (small, EMPTY_HINT_MORE))]
    gap = 14.0
    top = area.center().y() + 4 - (sum(r.height() for _f, _t, r in lines) + gap) / 2
    painter.setPen(theme.node_subtext)
    for font, text, rect in lines:
        painter.setFont(font)
        painter.drawText(QRectF(box.left(), top, box.width(), rect.height()), flags, text)
        top += rect.height() + gap
    painter.restore()
