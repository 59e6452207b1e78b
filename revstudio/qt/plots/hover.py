"""What the mouse points at in a plot: a thin vertical line, a dot on each curve's nearest point and
a box beside it listing those points' values, one line per curve in its colour; and a double
click, which frames the plot again after a zoom or pan (TensorBoard's reset).

The read-out under the plot names the values; the dots say which curve each one belongs to, as
TensorBoard's and Weights & Biases' hover does (with several runs overlaid, the read-out alone
did not show whose point was where). The dot sits on the curve drawn in full colour: the
smoothed value while smoothing is on, the raw one otherwise. The read-out under the plot, one
line for every curve, was cut short with two runs overlaid in a plot a third of a window wide
("run-a: loss 0.1854 (smoothed 0.2256),  run-b: loss 0.58…"): the box has a line per curve.
Leaving the plot hides them.
The double click is taken from the view's viewport before pyqtgraph sees it: pyqtgraph's scene hands
out a press's click before the double click's, so a double click read there came a click late.
"""
from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QPointF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QMouseEvent

from revstudio.qt import theme
from revstudio.qt.plots import plot_theme

DOT_PX = 7
GAP_PX = 6  # between the hover line (and the plot's top) and the box
AXIS_WORDS = {"step": "step", "epoch": "epoch", "time": "wall time (s)"}
MAX_LINES = 8
# (run-name characters, raw values shown) tried in turn until the box fits beside the line
FITS = ((None, True), (28, True), (20, True), (14, True), (None, False), (20, False), (14, False), (10, False),
        (6, False))  # of the hover box; more curves (many regions overlaid) end in "N more"


def fmt_value(v: float | None) -> str:
    """A curve's value as the read-outs print it: 4 significant digits, 3 for the very large or small."""
    if v is None or not math.isfinite(v):
        return "–"
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return f"{v:.3g}"
    return f"{v:.4g}"


class HoverMarks(QObject):
    """The hover line and dots of ``plot`` (a :class:`MetricPlot`)."""

    def __init__(self, plot: Any) -> None:
        super().__init__(plot)
        self.plot = plot
        self.line = pg.InfiniteLine(angle=90, movable=False)
        self.dots = pg.ScatterPlotItem(size=DOT_PX)
        self.box = pg.TextItem(anchor=(0, 0))
        self._lines: list[str] = []
        for item in (self.line, self.dots):
            item.setZValue(20)  # over the curves
            item.hide()
            plot.plot.addItem(item, ignoreBounds=True)
        # in the view box's own pixels, not the data's, and over the legend (also the view box's child)
        self.box.setParentItem(plot.plot.getPlotItem().getViewBox())
        self.box.setZValue(1000)
        self.box.hide()
        font = self.box.textItem.font()
        font.setPointSizeF(plot_theme.legend_pt())  # as the legend's
        self.box.textItem.setFont(font)
        plot.plot.viewport().installEventFilter(self)  # (the mouse is over the view's viewport)

    def points_at(self, x: float) -> list[tuple[float, float, str, str, str]]:
        """Each drawn curve's nearest point to ``x``: its x, its y as drawn, the curve's colour, its
        run's title (overlaid; else "") and the rest of its line in the box ("val loss 0.3 (raw 0.28)")."""
        out = []
        smoothing = self.plot.weight > 0
        which = "smooth" if smoothing else "value"
        overlaid = len(self.plot._runs) > 1
        for run, _colour in self.plot._runs:
            for channel in self.plot.channels:
                names = channel.names(run)
                for name in names:
                    curve = self.plot.curves.get((run.name, name))
                    series = run.series[name]
                    i = series.nearest(self.plot.axis, x)
                    if curve is None or i is None:
                        continue
                    p = series.point(i)
                    y = float(self.plot._drawn(np.array([p[which]]))[0])
                    if not math.isfinite(y):
                        continue
                    text = f"{channel.title(name, len(names) > 1)} {fmt_value(p[which])}"
                    if smoothing:
                        text += f" (raw {fmt_value(p['value'])})"
                    colour = curve.smooth.opts["pen"].color().name()
                    out.append((p[self.plot.axis], y, colour, run.title if overlaid else "", text))
        return out

    def show_at(self, x: float) -> int:
        """Mark ``x`` and the curves' nearest points; returns how many points were marked. Called again
        at each refresh that redrew a curve while the marks show: a run streaming under a resting
        mouse moves its smoothed curve, and the box's values with it."""
        points = self.points_at(x)
        if not self.plot._runs:  # (no run shown any more: nothing to point at)
            self.hide()
            return 0
        colours = theme.colors()
        self.line.setPen(pg.mkPen(colours.muted, width=1))
        self.line.setPos(x)
        self.line.show()
        # outlined in the window's colour: a dot stays readable where it lies over its own faint raw curve
        edge = pg.mkPen(colours.window, width=1.5)
        self.dots.setData([{"pos": (px, py), "brush": pg.mkBrush(c), "pen": edge} for px, py, c, _t, _r in points])
        self.dots.setVisible(bool(points))
        self._show_box(x, points)
        return len(points)

    def box_lines(self) -> list[str]:
        """The hover box's lines as plain text (what it shows, for tests and screen readers)."""
        return list(self._lines)

    def _show_box(self, x: float, points: list[tuple[float, float, str, str, str]]) -> None:
        """The box beside the hover line, inside the plot: right of the line where it fits there, else
        left of it; run names shortened in the middle where the box would be wider than the room."""
        if not points:
            self._lines = []
            self.box.hide()
            return
        vb = self.plot.plot.getPlotItem().getViewBox()
        frame = vb.sceneBoundingRect()
        line_x = vb.mapViewToScene(QPointF(x, 0)).x()
        room_right, room_left = frame.right() - line_x - 2 * GAP_PX, line_x - frame.left() - 2 * GAP_PX
        metrics = QFontMetricsF(self.box.textItem.font())
        # long run names shortened first, then the raw values left to the read-out under the plot
        for chars, raw in FITS:
            self._set_box_text(points, metrics, chars, raw)
            width = self.box.textItem.boundingRect().width()
            if width <= max(room_right, room_left):
                break
        right = room_right >= width or room_right >= room_left
        self.box.setAnchor((0, 0) if right else (1, 0))
        self.box.setPos(vb.mapFromScene(QPointF(line_x + (GAP_PX if right else -GAP_PX), frame.top() + GAP_PX)))
        self.box.show()

    def _set_box_text(self, points: list[tuple[float, float, str, str, str]], metrics: QFontMetricsF,
                      chars: int | None, raw: bool) -> None:
        c = theme.colors()
        lines = []
        for _x, _y, colour, title, rest in points:
            if not raw:
                rest = rest.split(" (raw ", 1)[0]
            if title and chars is not None and len(title) > chars:
                title = metrics.elidedText(title, Qt.TextElideMode.ElideMiddle, metrics.averageCharWidth() * chars)
            lines.append((colour, f"{title}: {rest}" if title else rest))
        if len(lines) > MAX_LINES:
            lines = lines[:MAX_LINES - 1] + [(c.muted, f"{len(points) - MAX_LINES + 1} more")]
        self._lines = [text for _c, text in lines]
        head = f"{AXIS_WORDS.get(self.plot.axis, self.plot.axis)} {fmt_value(points[0][0])}"
        rows = [f"<span style='color:{c.muted}'>{html.escape(head)}</span>"]
        rows += [f"<span style='color:{colour}'>&#9679;</span> {html.escape(text)}" for colour, text in lines]
        self.box.fill = pg.mkBrush(QColor(c.window))
        self.box.border = pg.mkPen(c.muted)
        self.box.setHtml(f"<div style='color:{c.text}'>{'<br>'.join(rows)}</div>")

    def hide(self) -> None:
        self.line.hide()
        self.dots.hide()
        self.box.hide()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        kind = event.type()
        if kind == QEvent.Type.Leave:
            self.hide()
        elif kind == QEvent.Type.MouseButtonDblClick and isinstance(event, QMouseEvent):
            widget = self.plot.plot
            scene_pos = widget.mapToScene(event.position().toPoint())
            if widget.getPlotItem().getViewBox().sceneBoundingRect().contains(QPointF(scene_pos)):
                self.plot.reset_zoom()
                return True
        return False
