"""A plot's legend kept whole inside the plot: more columns when its rows run past the plot's
foot, entries shortened in the middle when they are wider than the plot, hidden when nothing
readable would fit.

pyqtgraph anchors a legend at a corner and lets it grow past the opposite edge: in a plot a third
of a 1280 px window wide, "grad disagreement region-block0_split" lost its first letters at the
plot's left edge. Each curve keeps its whole name (``name()``); the legend shows what fits.
"""
from __future__ import annotations

import math
from typing import Any

import pyqtgraph as pg
from pyqtgraph.graphicsItems.LegendItem import ItemSample
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF

MARGIN = 8          # the legend's offset from the plot's corner (MetricPlot's addLegend)
CELL_GAP = 3        # pyqtgraph's LegendItem.updateSize adds this after each cell
SLACK = 4           # the label's own text margins
PAD = 3             # px inside the legend's backing, around its entries
TEXT_MARGIN = 1     # px around a label's text (Qt's default 4)
MIN_CHARS = 4       # an entry shorter than this ("l…s") tells nothing: the legend hides instead


class LineSample(ItemSample):
    """A curve's sample in a line of 8 pt text: pyqtgraph's is 20 px tall, so four entries (two
    regions' grad and inversion curves) needed 80 px, more than a plot a third of a window high."""

    HEIGHT = 14

    def __init__(self, item: Any) -> None:
        super().__init__(item)
        self.setFixedHeight(self.HEIGHT)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return QRectF(0, 0, 20, self.HEIGHT)

    def paint(self, p: Any, *args: Any) -> None:
        p.translate(0, (self.HEIGHT - 20) / 2)  # pyqtgraph draws the line at y 11 of its 20 px
        super().paint(p, *args)


def _label_font(label: pg.LabelItem) -> QFont:
    font = QFont(label.item.font())
    size = str(label.opts.get("size") or "")
    if size.endswith("pt"):
        font.setPointSizeF(float(size[:-2]))
    return font


def fit_legend(item: pg.PlotItem) -> None:
    """Lay out ``item``'s legend so that it lies whole inside the plot's drawing area."""
    legend = item.legend
    if legend is None or not legend.items:
        return
    vb = item.getViewBox()
    room_w, room_h = vb.width() - MARGIN - 1, vb.height() - MARGIN - 1
    entries = legend.items
    names = [str(sample.item.name() or label.text) if hasattr(sample.item, "name") else str(label.text)
             for sample, label in entries]
    for _sample, label in entries:
        if label.item.document().documentMargin() != TEXT_MARGIN:
            label.item.document().setDocumentMargin(TEXT_MARGIN)  # 4 px a side: four entries wanted 84 px
            label.setText(label.text)  # (its minimum size follows the text's box)
    metrics = QFontMetricsF(_label_font(entries[0][1]))
    legend.layout.setContentsMargins(PAD, PAD, PAD, PAD)  # (the style's 9 px took a row's height)
    row_h = max(max(sample.boundingRect().height(), label.minimumHeight()) for sample, label in entries)
    cols = 1
    while cols < len(entries) and math.ceil(len(entries) / cols) * row_h + 2 * PAD > room_h:
        cols += 1
    if cols != legend.columnCount:
        legend.setColumnCount(cols)
    sample_w = max(sample.boundingRect().width() for sample, _l in entries)
    per = (room_w - 2 * PAD) / cols - sample_w - 2 * CELL_GAP - SLACK
    # the middle goes first ("grad disagr…0_split"); where that leaves two entries alike, the
    # start ("…block0_split": the sample's dash still tells grad from inversion)
    for mode in (Qt.TextElideMode.ElideMiddle, Qt.TextElideMode.ElideLeft):
        shown = [metrics.elidedText(name, mode, max(per, 0.0)) for name in names]
        if len(set(shown)) == len(set(names)):
            break
    for (_sample, label), text in zip(entries, shown):
        if text != label.text:
            label.setText(text)
    legend.setGeometry(QRectF(0, 0, 0, 0))  # its cells at their own sizes, not stretched to the old box
    legend.layout.activate()
    legend.updateSize()
    readable = len(set(shown)) == len(set(names)) and all(len(t) >= min(MIN_CHARS, len(n))
                                                          for t, n in zip(shown, names))
    fits = legend.height() <= room_h + 0.5 and legend.width() <= room_w + 0.5
    legend.setVisible(readable and fits)
