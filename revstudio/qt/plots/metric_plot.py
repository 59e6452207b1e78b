"""One live plot: a few channels of one or more runs, raw and smoothed, with its own tools.

Each curve is drawn twice: the raw values faint, the debiased smoothed values
on top (only the raw one when smoothing is off). Curves are refreshed from the
runs' ring buffers by the panel's timer, and only when their buffer changed.
A curve is a bare ``PlotCurveItem`` handed what its pixels can show: the
points in view, or beyond two per pixel column their block minima and maxima
(``Series.view``, the 'peak' rule), on a log scale already as log10. So
pyqtgraph neither clips nor downsamples a 100,000-point curve again each
frame (a ``PlotDataItem``'s ``setData`` cost four times as much, and drawing
3,000 points where 900 pixels' worth show, three times the paint;
benchmarks/README.md, "Live plots"). The tool row has the log-y toggle, a
hover read-out and PNG/CSV export (written by plot_export.py); the pyqtgraph widget that
times its paints and shows the focus frame is plot_widget.py, the axes' ranges (x planned
over a run's length, y following the curves) plot_frame.py.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QGraphicsItem,
    QHBoxLayout,
    QLabel,
    QMenu,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from revstudio.qt.plots import plot_export, plot_theme
from revstudio.qt.plots.axis_title import TitledAxis
from revstudio.qt.plots.bytes_axis import BytesAxis
from revstudio.qt.plots.channel import Channel
from revstudio.qt.plots.fitted_label import FittedLabel
from revstudio.qt.plots.hover import HoverMarks
from revstudio.qt.plots.hover import fmt_value as _fmt
from revstudio.qt.plots.legend_fit import LineSample, fit_legend, place_legend
from revstudio.qt.plots.legend_keys import StyleKeys
from revstudio.qt.plots.log_axis import LogAxis
from revstudio.qt.plots.plot_frame import PlotFrameMixin
from revstudio.qt.plots.plot_keys import PointStepper
from revstudio.qt.plots.plot_widget import PlotWidget
from revstudio.qt.plots.rows import RunData
from revstudio.qt.plots.run_dashes import dash_pattern, styled
from revstudio.qt.plots.series import Series

# Curve colours, one set for both themes: each stands at 3:1 or more (WCAG 1.4.11, graphics) on the
# dark and on the light window. Tableau 10's yellow, pink and teal were 1.5-2.2:1 on the light one,
# so the third and later runs overlaid in the light theme were barely visible.
PALETTE = ("#3a86e8", "#d26e1a", "#409a3c", "#df4d4d", "#a070c8", "#23998f", "#a88a00", "#d35d8f", "#9c755f")
TICK_TEXT_WIDTH = 42  # px for the y tick labels ("1e-10", "0.0001", "2.95")
AXIS_LABELS = {"step": ("step", ""), "epoch": ("epoch", ""), "time": ("wall time", "s")}


@dataclass
class _Curve:
    raw: Any
    smooth: Any
    dot: Any = None  # a one-point curve is drawn as a dot (a line needs two points)
    version: int = -1
    stamp: tuple[Any, ...] = field(default_factory=tuple)
    points: int = 0
    bounds: tuple[float, float] | None = None  # lowest and highest y drawn (log10 on a log scale)
    pattern: list[float] | None = None  # its dash pattern (run_dashes.py; None: solid)


class MetricPlot(PlotFrameMixin, QWidget):
    """A titled plot with log-y, hover read-out and export."""

    def __init__(self, title: str, channels: Sequence[Channel], y_label: str = "", units: str = "",
                 log_y: bool = False, floor: float | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"plot_{title.lower().replace(' ', '_')}")
        self.title_text = title
        self.channels = list(channels)
        self.floor = floor  # on a log scale, values below it (an exact 0) are drawn at it
        self.dirty = False  # zoomed: the next tick redraws even if no row arrived
        self._planned: tuple[float, float] | None = None  # x range set from the runs' lengths
        self.curves: dict[tuple[str, str], _Curve] = {}
        self._overlaid = False  # the curves were made for several runs (a colour per run)
        self.axis = "step"
        self.weight = 0.0
        self._runs: list[tuple[RunData, str]] = []
        self.on_refresh: list[Callable[[MetricPlot], None]] = []  # extra drawing (reference lines, numbers)
        self.y_marks: list[float] = []  # reference values (drawn by on_refresh) the y range must show
        self._y_set: tuple[float, float, bool] | None = None  # the y range this plot last set, and its log flag
        self._legend_corner: tuple[float, float] | None = (1, 0)  # pyqtgraph's top right, till a curve comes there

        self.title = QLabel(f"<b>{title}</b>")
        self.note = FittedLabel()         # a number the plot stands for ("peak 29 % of standard's")
        self.note.setObjectName("plotNote")
        self.readout = FittedLabel()
        self.readout.setObjectName("plotReadout")
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.log_box = QCheckBox("log y")
        self.log_box.setChecked(log_y)
        self.log_box.toggled.connect(self.set_log_y)
        # One Save button with a menu, not a PNG and a CSV button: the tool row sets the plot's least
        # width, and with both a third of a 1280 px window's Output panel was too narrow for it.
        self.save_button = QToolButton()
        self.save_button.setText("Save")
        self.save_button.setToolTip("Save this plot as a PNG image, or its curves as CSV")
        self.save_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.save_button)
        self.png_action = menu.addAction("PNG image…")
        self.png_action.setToolTip("Save this plot as a PNG image")
        self.csv_action = menu.addAction("CSV table…")
        self.csv_action.setToolTip("Save the curves of this plot as CSV (raw and smoothed values)")
        self.save_button.setMenu(menu)
        tools = QHBoxLayout()
        tools.setContentsMargins(4, 0, 4, 0)
        tools.setSpacing(6)
        tools.addWidget(self.title)
        tools.addStretch(1)
        for tool in (self.log_box, self.save_button):
            tools.addWidget(tool)

        self.plot = PlotWidget()  # times its paints, frames itself when focused
        self.plot.setAccessibleName(f"{title} plot")  # painted curves: the CSV button gives their values
        self.refresh_ms = 0.0  # what the last refresh cost (setData and framing), with plot.paint_ms: a frame
        self.plot.setBackground(None)
        item = self.plot.getPlotItem()
        # No grid: pyqtgraph draws it into the axes' pictures, repainted whenever a range moves,
        # and it was most of a frame's cost while a run streams (benchmarks/bench_plots.py).
        item.addLegend(offset=(-8, 8), labelTextSize=f"{plot_theme.legend_pt():g}pt", sampleType=LineSample)
        item.setMenuEnabled(False)
        # in KiB/MiB/GiB like the lines' labels, not pyqtgraph's decimal MB; both read a short log range
        item.setAxisItems({"left": BytesAxis("left") if units == "B" else LogAxis("left"),
                           "bottom": TitledAxis("bottom")})  # (titles kept inside a narrow plot)
        self.plot.setLabel("left", y_label, units=units or None)
        if not units:  # "accuracy (x0.001)" helps nobody: SI prefixes only for bytes
            self.plot.getAxis("left").enableAutoSIPrefix(False)
        # A fixed room for the tick labels: an axis that widens or narrows with its labels ("0.5" ->
        # "0.495") re-lays out the plot and re-draws every curve in the middle of a streaming frame.
        self.plot.getAxis("left").setStyle(autoExpandTextSpace=False, tickTextWidth=TICK_TEXT_WIDTH)
        self.plot.setLabel("bottom", "step")
        plot_theme.style(self.plot)
        self.plot.setMinimumHeight(120)
        # Axes and legend change only when a range or a curve list does: drawn from a cached pixmap
        # otherwise, instead of replaying their pictures at every frame of a streaming run.
        for name in ("left", "bottom"):
            self.plot.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        item.legend.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.plot.scene().sigMouseMoved.connect(self._hover)
        item.getViewBox().sigXRangeChanged.connect(self._range_changed)
        item.getViewBox().sigResized.connect(lambda _vb: self._fit_legend())  # whole inside the plot
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(tools)
        layout.addWidget(self.plot, 1)
        # The note sits under the plot, left, where every plot has a row (the hover read-out's): the tool
        # row has no room left for it in a narrow plot. It keeps its whole text before the read-out does.
        bottom = QHBoxLayout()
        bottom.setContentsMargins(4, 0, 4, 0)
        bottom.setSpacing(12)
        bottom.addWidget(self.note)
        bottom.addWidget(self.readout, 1)
        layout.addLayout(bottom)
        self.set_log_y(log_y)
        self.stepper = PointStepper(self)  # arrow keys read the points out (plot_keys.py)
        self.keys = StyleKeys(self.plot)  # overlaid: what solid and dashed stand for (legend_keys.py)
        self.hover = HoverMarks(self)  # a line and a dot on each curve where the mouse points (hover.py)

    # ---- drawing -------------------------------------------------------------
    def set_log_y(self, on: bool) -> None:
        self.plot.getPlotItem().setLogMode(x=False, y=bool(on))
        if self.log_box.isChecked() != bool(on):
            self.log_box.setChecked(bool(on))
        for fn in self.on_refresh:
            fn(self)

    @property
    def log_y(self) -> bool:
        return self.log_box.isChecked()

    def set_axis(self, axis: str) -> None:
        self.axis = axis
        name, unit = AXIS_LABELS[axis]
        self.plot.setLabel("bottom", name, units=unit or None)

    def refresh(self, runs: Sequence[tuple[RunData, str]], axis: str, weight: float) -> int:
        """Bring the curves up to date with ``runs`` (data, colour); returns how many were redrawn."""
        if axis != self.axis:
            self.set_axis(axis)
        self.weight = weight
        self.dirty = False
        self._runs = list(runs)
        self._plan_x(runs, axis)
        wanted: set[tuple[str, str]] = set()
        redrawn = made = 0
        overlay = len(runs) > 1
        if overlay != self._overlaid:  # a run's curves change colour and name with the mode: anew
            self._overlaid = overlay
            for made_before in self.curves.values():
                self._remove_curve(made_before)
            self.curves.clear()
        for r, (run, colour) in enumerate(runs):
            names = [(ch, n) for ch in self.channels for n in ch.names(run)]
            several = {ch.key: sum(1 for c, _n in names if c is ch) > 1 for ch in self.channels}
            for i, (channel, name) in enumerate(names):
                key = (run.name, name)
                wanted.add(key)
                series = run.series[name]
                curve = self.curves.get(key)
                # Overlaid, a run is one colour and a dashed curve its validation/inversion one:
                # the legend names each run once ("run-a: loss", "run-a: val loss", ... made
                # twice the entries, too many for a plot a third of a window wide), by its label if it has one
                label: str | None = channel.title(name, several[channel.key])
                if overlay:
                    label = run.title if i == 0 else None
                # overlaid, the fourth run and later ones have dashes of their own (run_dashes.py)
                pattern = dash_pattern(r if overlay else 0, channel.dashed)
                if curve is not None and (curve.smooth.name(), curve.pattern) != (label, pattern):
                    self._remove_curve(self.curves.pop(key))  # (the run was labelled or moved since)
                    curve = None
                if curve is None:
                    base = colour if overlay else PALETTE[i % len(PALETTE)]
                    curve = self.curves[key] = self._make_curve(base, label, pattern)
                    made += 1
                stamp = (axis, weight > 0, self.log_y)
                if curve.version == series.version and curve.stamp == stamp:
                    continue
                self._set_data(curve, series, axis, weight > 0)
                curve.version, curve.stamp = series.version, stamp
                redrawn += 1
        stale = [k for k in self.curves if k not in wanted]
        for key in stale:
            self._remove_curve(self.curves.pop(key))
        drawn = {ch.key for run, _c in runs for ch in self.channels if ch.names(run)}
        if made:
            self.keys.clear()
        if self.keys.update(self.channels, drawn, overlay) or made or stale:
            self._fit_legend()
        for fn in self.on_refresh:
            fn(self)
        self._follow_y()
        self._place_legend()
        if self.hover.line.isVisible() and (redrawn or stale):  # the mouse rests on a plot that moved on
            self.hover.show_at(self.hover.line.value())
        return redrawn

    def _fit_legend(self) -> None:
        """The legend whole inside the plot; none for a lone curve, which the y axis names (the
        memory plot's "measured peak" lay over its "est. standard" line's label)."""
        item = self.plot.getPlotItem()
        fit_legend(item)
        if len(self.curves) < 2:
            item.legend.hide()
        self._place_legend()

    def _place_legend(self) -> None:
        """The legend in the corner where it hides the fewest curve points (in both themes alike)."""
        if not self.isVisible():  # (also while a closing window's plots are resized away)
            return
        curves = [c for curve in self.curves.values() for c in (curve.raw, curve.smooth, curve.dot) if c is not None]
        self._legend_corner = place_legend(self.plot.getPlotItem(), curves, self._legend_corner)

    def _make_curve(self, colour: str, label: str | None, pattern: list[float] | None) -> _Curve:
        faint = QColor(colour)
        faint.setAlpha(70)
        raw = pg.PlotCurveItem(pen=styled(pg.mkPen(faint, width=1), pattern))
        # (the legend's sample draws this pen: a run's key line has its dashes)
        smooth = pg.PlotCurveItem(pen=styled(pg.mkPen(colour, width=2), pattern), name=label)
        self.plot.addItem(raw)
        self.plot.addItem(smooth)  # with its name: the legend lists it (a nameless one, not)
        return _Curve(raw, smooth, pattern=pattern)

    def _remove_curve(self, curve: _Curve) -> None:
        for item in (curve.raw, curve.smooth, curve.dot):
            if item is not None:
                self.plot.removeItem(item)

    def _drawn(self, y: np.ndarray) -> np.ndarray:
        """y as drawn: on a log scale log10 of it (values at or below 0 left out; ``floor`` first)."""
        if not self.log_y:
            return y
        if self.floor is not None:
            y = np.maximum(y, self.floor)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(y > 0, np.log10(np.where(y > 0, y, 1.0)), np.nan)

    def _max_points(self, series: Series, axis: str, zoomed: tuple[float, float] | None) -> int:
        """Two points per pixel column of the part of the plot the curve spans."""
        vb = self.plot.getPlotItem().getViewBox()
        width = max(100.0, float(vb.width()))
        lo, hi = vb.viewRange()[0]
        xs = series.column(axis)
        if zoomed is None and len(xs) and hi > lo:
            width *= min(1.0, max(0.05, (float(xs[-1]) - float(xs[0])) / (hi - lo)))
        return int(2 * width)

    def _set_data(self, curve: _Curve, series: Series, axis: str, smoothing: bool) -> None:
        xr = self._zoomed_range()
        most = self._max_points(series, axis, xr)
        x, y = series.view(axis, "value", xr, most)
        y = self._drawn(y)
        if len(series) == 1:  # one point is a dot, not an invisible zero-length line
            if curve.dot is None:
                curve.dot = pg.ScatterPlotItem(size=5, pen=None, brush=pg.mkBrush(curve.smooth.opts["pen"].color()))
                self.plot.addItem(curve.dot)
            curve.dot.setData(x, y)
            curve.dot.show()
        elif curve.dot is not None and curve.dot.isVisible():
            curve.dot.hide()
        if smoothing:
            xs, sm = series.view(axis, "smooth", xr, most)
            sm = self._drawn(sm)
            curve.raw.setData(x, y)
            curve.smooth.setData(xs, sm)
        else:
            curve.raw.setData([], [])
            curve.smooth.setData(x, y)
        curve.points = len(series)
        curve.bounds = _bounds((y, sm) if smoothing else (y,))

    def curve_points(self) -> dict[tuple[str, str], int]:
        """How many points each curve has (for tests and the benchmark)."""
        return {key: c.points for key, c in self.curves.items()}

    # ---- reading --------------------------------------------------------------
    def _hover(self, pos: QPointF) -> None:
        vb = self.plot.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(pos) or not self._runs:
            self.hover.hide()  # (over an axis or the legend's margin: no point is pointed at)
            return
        x = vb.mapSceneToView(pos).x()
        self.readout.set_texts([self.describe_at(x)])
        self.hover.show_at(x)

    def reset_zoom(self) -> None:
        """Back to the plot's own frame: x over the runs' whole length, y over the curves (a double
        click in the plot, hover.py)."""
        vb = self.plot.getPlotItem().getViewBox()
        self._planned = None
        self._y_set = None
        vb.enableAutoRange()
        for curve in self.curves.values():
            curve.version = -1  # the zoomed view drew only the points in it
        self.refresh(self._runs, self.axis, self.weight)

    def describe_at(self, x: float) -> str:
        """The read-out at ``x``: for each curve the nearest point's value (and smoothed value)."""
        parts = []
        for run, _colour in self._runs:
            for channel in self.channels:
                for name in channel.names(run):
                    series = run.series[name]
                    i = series.nearest(self.axis, x)
                    if i is None:
                        continue
                    p = series.point(i)
                    label = (f"{run.title}: " if len(self._runs) > 1 else "") + channel.title(name)
                    text = f"{label} {_fmt(p['value'])}"
                    if self.weight > 0 or series.weight > 0:
                        text += f" (smoothed {_fmt(p['smooth'])})"
                    parts.append(text)
        if not parts:
            return ""
        return f"{AXIS_LABELS[self.axis][0]} {_fmt(x)}:  " + ",  ".join(parts)

    # ---- export --------------------------------------------------------------------
    def export_png(self, path: str) -> None:
        plot_export.export_png(self.plot, path)

    def export_csv(self, path: str) -> int:
        """Every curve of the plot as rows ``run, series, step, epoch, time, value, smoothed``."""
        return plot_export.export_csv(path, self._runs, self.channels)


def _bounds(arrays: Sequence[np.ndarray]) -> tuple[float, float] | None:
    """Lowest and highest finite value of the drawn arrays (already log10 on a log scale)."""
    lo, hi = math.inf, -math.inf
    for a in arrays:
        a = a[np.isfinite(a)]
        if a.size:
            lo, hi = min(lo, float(a.min())), max(hi, float(a.max()))
    if lo > hi:
        return None
    return lo, hi
