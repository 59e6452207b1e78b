"""Where a live plot's axes stand: the x axis planned over the runs' whole length, the y axis
following the drawn curves (moving only when one leaves its range), and a range the user zoomed or
panned to left alone. :class:`PlotFrameMixin` is mixed into ``metric_plot.MetricPlot``, which owns
the plot, its curves and their y bounds.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyqtgraph as pg

if TYPE_CHECKING:  # pragma: no cover
    from revstudio.qt.plots.plot_widget import PlotWidget
    from revstudio.qt.plots.rows import RunData

MARK_LABEL_PX = 24  # room for a reference line's label above it (pyqtgraph's 22 px text box, the memory plot)


class PlotFrameMixin:
    """The x and y framing of ``MetricPlot``: ``reset_view``, ``_plan_x``, ``_follow_y``, ``_zoomed_range``."""

    if TYPE_CHECKING:  # provided by MetricPlot
        plot: PlotWidget
        curves: dict[tuple[str, str], Any]
        floor: float | None
        dirty: bool
        y_marks: list[float]
        _planned: tuple[float, float] | None
        _y_set: tuple[float, float, bool] | None

        @property
        def log_y(self) -> bool: ...

    def reset_view(self) -> None:
        """Frame the plot as before any run (its curves gone: no run shown)."""
        vb = self.plot.getPlotItem().getViewBox()
        self._y_set = None
        vb.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)
        vb.enableAutoRange()
        self._follow_y()  # (a log plot frames the decades its values will fall in)

    def _follow_y(self) -> None:
        """Frame y over the drawn curves, moving the range only when a curve leaves it.

        pyqtgraph's own autorange re-frames the y axis at every frame of a
        streaming run (the newest loss is always a new minimum), and a new range
        repaints the axis and re-clips every curve: most of a streaming frame's
        cost (benchmarks/bench_plots.py). Here the range keeps a 25 % margin on
        each side (on a linear axis not below 0 where no value is negative) and
        moves only when a curve leaves it or fills under half of it, so every
        point, spikes included, stays in view. A range the user
        zoomed or panned to is left alone; the plot's "A" button (pyqtgraph's
        autorange) hands the range back to this.
        """
        vb = self.plot.getPlotItem().getViewBox()
        cur = None
        if not vb.autoRangeEnabled()[1]:
            if self._y_set is None:
                return  # the user's range
            if self._y_set[2] == self.log_y:  # (a log toggle re-frames)
                lo_now, hi_now = vb.viewRange()[1]
                tol = 1e-6 * max(abs(self._y_set[1] - self._y_set[0]), 1e-300)
                if abs(lo_now - self._y_set[0]) > tol or abs(hi_now - self._y_set[1]) > tol:
                    self._y_set = None  # zoomed or panned by the user
                    return
                cur = self._y_set
        lows = [c.bounds[0] for c in self.curves.values() if c.bounds is not None]
        highs = [c.bounds[1] for c in self.curves.values() if c.bounds is not None]
        for v in self.y_marks:
            if self.log_y and v <= 0 or not math.isfinite(v):
                continue
            v = math.log10(v) if self.log_y else float(v)
            lows.append(v)
            highs.append(v)
        if not lows and self.log_y and self._y_set is None:
            # nothing drawn yet: pyqtgraph's default 1..10 on a log axis labels every minor tick
            # ("2 3 4 ... 9" on top of each other); frame the decades the values will fall in
            vb.disableAutoRange(axis=pg.ViewBox.YAxis)
            vb.setYRange(math.log10(self.floor or 1e-12), 0.0, padding=0.05)
            lo_set, hi_set = vb.viewRange()[1]
            self._y_set = (float(lo_set), float(hi_set), self.log_y)  # ours: the first values re-frame it
            return
        if not lows:
            if not self.log_y and self._y_set is not None and self._y_set[2]:  # log y turned off, empty
                self._y_set = None
                vb.enableAutoRange(axis=pg.ViewBox.YAxis)
            return
        lo, hi = min(lows), max(highs)
        if cur is not None and cur[0] <= lo and hi <= cur[1] and hi - lo >= 0.5 * (cur[1] - cur[0]):
            return
        span = hi - lo
        # a flat curve (a run's measured peak is the same bytes at every step) is framed around
        # its value; its smoothed copy may differ in the last bits, which is no span to zoom into
        flat = span <= 1e-9 * max(abs(lo), abs(hi))
        margin = max(0.1 * abs(hi), 0.5 if self.log_y else 1e-3) if flat else 0.25 * span
        top = margin
        height = vb.height()
        if self.y_marks and height > 2 * MARK_LABEL_PX:
            # a reference line's label sits above it: the top one's needs a line of text of room,
            # or the frame cut it in half ("est. standard" at the memory plot's top edge)
            top = max(margin, MARK_LABEL_PX * (span + margin) / (height - MARK_LABEL_PX))
        bottom = lo - margin
        if not self.log_y and lo >= 0 and bottom < 0:
            bottom = 0.0  # a loss, an accuracy, a byte count is never below 0: no band of negatives under it
        vb.disableAutoRange(axis=pg.ViewBox.YAxis)
        vb.setYRange(bottom, hi + top, padding=0)
        lo_set, hi_set = vb.viewRange()[1]
        self._y_set = (float(lo_set), float(hi_set), self.log_y)

    def _plan_x(self, runs: Sequence[tuple[RunData, str]], axis: str) -> None:
        """Over steps or epochs the x axis spans the whole run from its first row.

        The curves grow into a fixed frame (the plot doubles as progress), and
        the x axis is not redrawn at every frame as it would be if it chased
        the newest point.
        """
        vb = self.plot.getPlotItem().getViewBox()
        ends = []
        for run, _c in runs:
            total = run.total_steps
            if total and axis == "step":
                ends.append(float(total))
            elif total and axis == "epoch" and run.info.get("steps_per_epoch"):
                ends.append(total / float(run.info["steps_per_epoch"]))
        if axis == "time" or not ends or len(ends) != len(runs):
            if self._planned is not None:
                self._planned = None
                vb.enableAutoRange(x=True)
            return
        planned = (0.0, max(ends))
        if planned != self._planned and (self._planned is None or self._zoomed_range() is None):
            self._planned = planned
            vb.setXRange(*planned, padding=0.02)

    def zoom_x(self, factor: float) -> None:
        """Zoom the x range about its centre: ``factor`` of it kept (under 1 zooms in, over 1 out;
        the + and - keys of a focused plot). The curves redraw the points now in view next tick."""
        vb = self.plot.getPlotItem().getViewBox()
        lo, hi = vb.viewRange()[0]
        mid, half = (lo + hi) / 2, (hi - lo) / 2 * factor
        vb.disableAutoRange(axis=pg.ViewBox.XAxis)
        vb.setXRange(mid - half, mid + half, padding=0)

    def _zoomed_range(self) -> tuple[float, float] | None:
        """The x range the user zoomed to (None while the plot follows the data or the planned range)."""
        vb = self.plot.getPlotItem().getViewBox()
        if vb.autoRangeEnabled()[0]:
            return None
        lo, hi = vb.viewRange()[0]
        if self._planned is not None:
            pad = 0.021 * (self._planned[1] - self._planned[0])
            if abs(lo - (self._planned[0] - pad)) <= pad and abs(hi - (self._planned[1] + pad)) <= pad:
                return None
        return float(lo), float(hi)

    def _range_changed(self, *_args: object) -> None:
        if self._zoomed_range() is not None:  # zoomed by the user: draw the points now in view
            for curve in self.curves.values():
                curve.version = -1
            self.dirty = True
