"""An axis whose title stays whole inside its plot at any width.

pyqtgraph centres an axis's title on the axis and draws it at its full length: in a narrow
window the Gradient Check's "normalised disagreement with standard autograd (log scale; exact =
1e-20)" ran past the plot's right edge, cut mid-word. :class:`TitledAxis` keeps the title inside
the plot (centred on the axis where it fits, shifted in where it does not: the corner under the
side axis is free) and, where the plot is shorter than the title, shows the longest of its shorter
forms that fits (:meth:`TitledAxis.set_short_titles`), the last one elided; the tooltip keeps the
whole title.
"""
from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFontMetricsF

EDGE_PX = 2.0  # room kept between a title and the plot's edge
NUDGE_PX = 5   # pyqtgraph's offset of a title from its axis's outer edge


class TitledAxis(pg.AxisItem):
    """A :class:`pyqtgraph.AxisItem` whose title is never drawn past its plot's edges."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.short_titles: tuple[str, ...] = ()
        self.shown_title = ""  # the plain text drawn (the whole title, a shorter form or an elided one)
        super().__init__(*args, **kwargs)
        self.geometryChanged.connect(self.place_title)  # (moved or resized: after pyqtgraph's own placing)

    def set_short_titles(self, titles: Sequence[str]) -> None:
        """Shorter forms of the title, longest first, shown where the whole one does not fit."""
        self.short_titles = tuple(t for t in titles if t)
        self.place_title()

    def _updateLabel(self) -> None:  # noqa: N802 - pyqtgraph's; every title, pen or unit change ends here
        super()._updateLabel()
        self.place_title()

    def _plot_rect(self) -> QRectF | None:
        """The whole plot (its top item: a PlotItem), in scene coordinates; None before it is laid out."""
        top = self.topLevelItem()
        if top is None or top is self:
            return None
        rect = top.sceneBoundingRect()
        return rect if rect.width() > 0 and rect.height() > 0 else None

    def place_title(self) -> None:
        label = self.label
        plot = self._plot_rect()
        if label is None or plot is None:
            return
        vertical = self.orientation in ("left", "right")
        own = self.scenePos()  # the axis's own corner (its bounding rect reaches past it for the ticks)
        room = (plot.height() if vertical else plot.width()) - 2 * EDGE_PX
        full_html = self.labelString()
        label.setHtml(full_html)
        full = label.toPlainText()
        shown = full
        if label.boundingRect().width() > room:
            style = ";".join(f"{k}: {v}" for k, v in self.labelStyle.items())
            shown = self._fitting(full, room, lambda text: label.setHtml(f"<span style='{style}'>{escape(text)}</span>"))
        self.shown_title = shown.strip()
        label.setToolTip(full.strip() if shown != full else "")
        self._position(label, vertical, plot, own)

    def generateDrawSpecs(self, p: Any) -> Any:  # noqa: N802 - pyqtgraph's
        """A vertical axis draws its end ticks' labels up to 15 px past its ends (centred on the tick):
        the top one was cut by the plot's top edge. Such a label is moved in, to lie inside the plot."""
        specs = super().generateDrawSpecs(p)
        plot = self._plot_rect()
        if specs is None or plot is None or self.orientation not in ("left", "right"):
            return specs
        axis_spec, tick_specs, text_specs = specs
        top, bottom = plot.top() - self.scenePos().y(), plot.bottom() - self.scenePos().y()
        for rect, _flags, _text in text_specs:
            if rect.top() < top:
                rect.moveTop(top)
            elif rect.bottom() > bottom:
                rect.moveBottom(bottom)
        return axis_spec, tick_specs, text_specs

    def _fitting(self, full: str, room: float, show: Any) -> str:
        """Shows (by ``show``) and returns the longest short form that fits ``room``, else the last elided."""
        label = self.label
        for text in self.short_titles:
            show(text)
            if label.boundingRect().width() <= room:
                return text
        last = self.short_titles[-1] if self.short_titles else full
        metrics = QFontMetricsF(label.font())
        slack = label.boundingRect().width() - metrics.horizontalAdvance(last)  # the document's margins
        width = max(0.0, room - slack)
        text = metrics.elidedText(last, Qt.TextElideMode.ElideRight, width)
        show(text)
        while text and label.boundingRect().width() > room:  # (html measures a little wider than the metrics)
            width -= metrics.averageCharWidth()
            text = metrics.elidedText(last, Qt.TextElideMode.ElideRight, max(0.0, width))
            show(text)
        return text

    def _position(self, label: Any, vertical: bool, plot: QRectF, own: QPointF) -> None:
        """Centred on the axis where the plot has room for it, else moved in to lie inside the plot."""
        length = label.boundingRect().width()
        thick = label.boundingRect().height()
        size = self.size()
        if vertical:
            # (rotated -90: the text runs bottom to top from its position's y)
            centre = size.height() / 2 + length / 2
            lo = plot.top() + EDGE_PX - own.y() + length  # its top inside the plot
            hi = plot.bottom() - EDGE_PX - own.y()          # its start (bottom) inside the plot
            y = min(max(centre, lo), hi)
            x = -NUDGE_PX if self.orientation == "left" else size.width() - thick + NUDGE_PX
            margin = label.document().documentMargin()
            x = max(min(x, plot.right() - own.x() - thick + margin), plot.left() - own.x() - margin)
            label.setPos(QPointF(int(x), int(y)))
        else:
            centre = size.width() / 2 - length / 2
            lo = plot.left() + EDGE_PX - own.x()
            hi = plot.right() - EDGE_PX - own.x() - length
            x = max(min(centre, hi), lo)
            y = -NUDGE_PX if self.orientation == "top" else size.height() - thick + NUDGE_PX
            # (pyqtgraph gives the title 0.8 of its height: a large text size went past the bottom)
            margin = label.document().documentMargin()
            y = max(min(y, plot.bottom() - own.y() - thick + margin), plot.top() - own.y() - margin)
            label.setPos(QPointF(int(x), int(y)))
