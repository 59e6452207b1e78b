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


# pyqtgraph's top-right first, then where a rising (accuracy) or falling (loss) curve leaves room,
# then half-way down a side (between two level lines: a gradient check's error and inversion)
CORNERS: tuple[tuple[float, float], ...] = ((1, 0), (1, 1), (0, 0), (0, 1), (1, 0.5), (0, 0.5))
SAMPLES = 24  # points per curve looked at across a corner's width (a line can cross it between points)


def corner_rect(item: pg.PlotItem, corner: tuple[float, float]) -> QRectF:
    """Where the legend lies at ``corner`` ((0|1, 0|0.5|1): left|right, top|middle|bottom), in the
    view box's px."""
    vb, legend = item.getViewBox(), item.legend
    w, h = legend.width(), legend.height()
    left = MARGIN if corner[0] == 0 else vb.width() - MARGIN - w
    top = MARGIN + corner[1] * (vb.height() - 2 * MARGIN - h)
    return QRectF(left, top, w, h)


def curve_hits(item: pg.PlotItem, curves: Any, rect: QRectF) -> int:
    """How many of the curves' points (sampled along each line) ``rect`` (view box px) covers."""
    import numpy as np

    vb = item.getViewBox()
    view = vb.viewRect()
    if vb.width() <= 0 or vb.height() <= 0 or view.width() <= 0 or view.height() <= 0:
        return 0
    x0 = view.left() + rect.left() / vb.width() * view.width()
    x1 = view.left() + rect.right() / vb.width() * view.width()
    y_top = view.top() + (1 - rect.top() / vb.height()) * view.height()  # (view y grows upwards)
    y_low = view.top() + (1 - rect.bottom() / vb.height()) * view.height()
    hits = 0
    for curve in curves:
        xs, ys = curve.getData()
        if xs is None or len(xs) == 0:
            continue
        xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
        keep = np.isfinite(xs) & np.isfinite(ys)
        xs, ys = xs[keep], ys[keep]
        if len(xs) == 0 or xs[-1] < x0 or xs[0] > x1:
            continue
        inside = (ys >= y_low) & (ys <= y_top) & (xs >= x0) & (xs <= x1)
        hits += int(np.count_nonzero(inside))
        at = np.linspace(x0, x1, SAMPLES)  # evenly across the box: a line through its edge counts less
        at = at[(at >= xs[0]) & (at <= xs[-1])]
        line = np.interp(at, xs, ys)
        hits += int(np.count_nonzero((line >= y_low) & (line <= y_top)))
    return hits


def place_legend(item: pg.PlotItem, curves: Any,
                 current: tuple[float, float] | None) -> tuple[float, float] | None:
    """Put the legend in the corner where it covers the fewest curve points (it lay over an accuracy
    curve rising into pyqtgraph's top-right corner); it stays put unless another corner is clearer.
    Returns the corner it is in."""
    legend = item.legend
    if legend is None or not legend.isVisible() or not legend.items:
        return current
    curves = list(curves)
    score = {c: curve_hits(item, curves, corner_rect(item, c)) for c in CORNERS}
    best = min(CORNERS, key=lambda c: score[c])
    if current is not None and score[current] <= score[best]:
        best = current
    if best != current:
        offset = (MARGIN - 2 * MARGIN * best[0], MARGIN - 2 * MARGIN * best[1])
        legend.anchor(itemPos=best, parentPos=best, offset=offset)
    return best
