"""What the mouse points at in a plot: a thin vertical line, and a dot on each curve's nearest point;
and a double click, which frames the plot again after a zoom or pan (TensorBoard's reset).

The read-out under the plot names the values; the dots say which curve each one belongs to, as
TensorBoard's and Weights & Biases' hover does (with several runs overlaid, the read-out alone
did not show whose point was where). The dot sits on the curve drawn in full colour: the
smoothed value while smoothing is on, the raw one otherwise. Leaving the plot hides both.
The double click is taken from the view's viewport before pyqtgraph sees it: pyqtgraph's scene hands
out a press's click before the double click's, so a double click read there came a click late.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QPointF
from PySide6.QtGui import QMouseEvent

from revstudio.qt import theme

DOT_PX = 7


class HoverMarks(QObject):
    """The hover line and dots of ``plot`` (a :class:`MetricPlot`)."""

    def __init__(self, plot: Any) -> None:
        super().__init__(plot)
        self.plot = plot
        self.line = pg.InfiniteLine(angle=90, movable=False)
        self.dots = pg.ScatterPlotItem(size=DOT_PX)
        for item in (self.line, self.dots):
            item.setZValue(20)  # over the curves
            item.hide()
            plot.plot.addItem(item, ignoreBounds=True)
        plot.plot.viewport().installEventFilter(self)  # (the mouse is over the view's viewport)

    def points_at(self, x: float) -> list[tuple[float, float, str]]:
        """Each drawn curve's nearest point to ``x``: its x, its y as drawn, and the curve's colour."""
        out = []
        which = "smooth" if self.plot.weight > 0 else "value"
        for run, _colour in self.plot._runs:
            for channel in self.plot.channels:
                for name in channel.names(run):
                    curve = self.plot.curves.get((run.name, name))
                    series = run.series[name]
                    i = series.nearest(self.plot.axis, x)
                    if curve is None or i is None:
                        continue
                    p = series.point(i)
                    y = float(self.plot._drawn(np.array([p[which]]))[0])
                    if math.isfinite(y):
                        out.append((p[self.plot.axis], y, curve.smooth.opts["pen"].color().name()))
        return out

    def show_at(self, x: float) -> int:
        """Mark ``x`` and the curves' nearest points; returns how many points were marked."""
        points = self.points_at(x)
        muted = theme.colors().muted
        self.line.setPen(pg.mkPen(muted, width=1))
        self.line.setPos(x)
        self.line.show()
        # outlined in the window's colour: a dot stays readable where it lies over its own faint raw curve
        edge = pg.mkPen(theme.colors().window, width=1.5)
        self.dots.setData([{"pos": (px, py), "brush": pg.mkBrush(c), "pen": edge} for px, py, c in points])
        self.dots.setVisible(bool(points))
        return len(points)

    def hide(self) -> None:
        self.line.hide()
        self.dots.hide()

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
