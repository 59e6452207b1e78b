"""``revstudio memory`` and ``revstudio gradcheck`` results drawn, not only printed.

Memory: one group of bars per mode, the measured peak of one training step
beside the static estimate, and the saving against standard mode in words.
Gradient check: one horizontal bar per tensor (parameters, inputs, outputs)
on a log scale of the normalised disagreement with standard autograd, the
pass/fail tolerance as a line, and each region's inversion error.
"""
from __future__ import annotations

import math
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFontMetricsF, QResizeEvent
from PySide6.QtWidgets import QDialog, QLabel, QVBoxLayout, QWidget

from revstudio.qt import theme
from revstudio.qt.fit_scroll import resize_within_screen
from revstudio.qt.plots import plot_theme
from revstudio.qt.plots.axis_title import TitledAxis
from revstudio.qt.plots.bytes_axis import BytesAxis
from revstudio.qt.plots.metric_plot import PALETTE
from revstudio.qt.report_facts import human_bytes

VIEW_PX = 160       # the least width of a plot's bars beside its names
AXIS_PX = 60        # a name axis's ticks, its title and the plot's margins
MAX_NAMES_PX = 480  # names wider than this are cut by pyqtgraph's axis, not given more room
FLOOR = 1e-20   # an exact agreement (error 0) is drawn at this level
MODE_ORDER = ("standard", "checkpoint", "reversible")


def memory_bars(result: dict[str, Any]) -> tuple[list[str], list[float], list[float | None]]:
    """(modes, measured peaks, estimated peaks) from ``revstudio memory --json``."""
    modes = [m for m in MODE_ORDER if m in (result.get("modes") or {})]
    modes += [m for m in result.get("modes") or {} if m not in modes]
    est = (result.get("estimate") or {}).get("modes") or {}
    measured = [float(result["modes"][m].get("peak_bytes") or 0) for m in modes]
    estimated: list[float | None] = []
    for m in modes:
        e = est.get(m) or {}
        value = e.get("peak_bytes", e.get("activation_bytes"))
        estimated.append(float(value) if isinstance(value, (int, float)) else None)
    return modes, measured, estimated


OVER = "✗"  # marks a gradient check row over tolerance, beside its name


def _over_brush(colour: str) -> QBrush:
    """A hatched fill: a bar over tolerance differs from an agreeing one by its pattern, not its hue alone."""
    return QBrush(QColor(colour), Qt.BrushStyle.BDiagPattern)


def gradcheck_bars(result: dict[str, Any]) -> list[tuple[str, float]]:
    """(label, error) per tensor and per region's inversion, worst first, from ``revstudio gradcheck --json``."""
    rows: list[tuple[str, float]] = []
    for group in ("parameters", "inputs", "outputs", "buffers"):
        for name, v in (result.get(group) or {}).items():
            if isinstance(v, dict) and isinstance(v.get("error"), (int, float)):
                kind = group[:-1]
                # (gradcheck names its outputs "output logits" already: said once)
                label = name if name.startswith(f"{kind} ") else f"{kind} {name}"
                rows.append((label, float(v["error"])))
    for region, v in (result.get("inversion_error") or {}).items():
        if isinstance(v, (int, float)):
            rows.append((f"inversion {region}", float(v)))
    rows.sort(key=lambda r: -r[1])
    return rows


class _LogTicks(TitledAxis):
    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        return [f"1e{int(round(v))}" if abs(v - round(v)) < 1e-6 else "" for v in values]


class _NameTicks(TitledAxis):
    """One name per bar (every k-th where rows are closer than a line of text).

    pyqtgraph passes an inverted axis's range high end first (the gradient check's
    worst-first bars run top down): read as (low, high), it named no bar at all."""

    ROW_TEXT_PX = 16  # a name's line (the axis's default font)

    def __init__(self, names: list[str], **kw: Any) -> None:
        super().__init__(**kw)
        self.names = names

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[Any]:  # noqa: N802,N803
        lo, hi = sorted((minVal, maxVal))
        per_row = size / max(hi - lo, 1e-9)
        stride = max(1, math.ceil(self.ROW_TEXT_PX / per_row)) if per_row > 0 else 1
        return [(float(stride), [float(i) for i in range(0, len(self.names), stride) if lo - 1 <= i <= hi + 1])]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        return [self.names[int(v)] if 0 <= int(v) < len(self.names) else "" for v in values]


def memory_widget(result: dict[str, Any]) -> tuple[QWidget, str]:
    modes, measured, estimated = memory_bars(result)
    plot = pg.PlotWidget(axisItems={"bottom": _NameTicks(modes, orientation="bottom"), "left": BytesAxis("left")})
    plot.setBackground(None)
    xs = list(range(len(modes)))
    # bars at 3:1 or more on the window in both themes (the grey estimate was 2.6:1 on the light one)
    measured_colour, estimate_colour = PALETTE[0], theme.colors().muted
    plot.addItem(pg.BarGraphItem(x=[x - 0.18 for x in xs], height=measured, width=0.34, brush=measured_colour,
                                 name="measured peak"))
    est_x = [x + 0.18 for x, e in zip(xs, estimated) if e is not None]
    est_h = [e for e in estimated if e is not None]
    if est_h:
        plot.addItem(pg.BarGraphItem(x=est_x, height=est_h, width=0.34, brush=estimate_colour, name="estimate"))
    plot.setLabel("left", "peak of one step", units="B")
    # A band above the tallest bar for the legend, in one row: at pyqtgraph's default place it
    # lay over the standard bars, its labels unreadable on them.
    top = max([*measured, *est_h, 1.0])
    plot.setYRange(0, top * 1.3, padding=0)
    plot.setMinimumWidth(VIEW_PX + 2 * AXIS_PX)  # (three groups of bars, their names and a bytes axis)
    plot.getPlotItem().getViewBox().setMouseEnabled(x=False, y=False)
    legend = plot.addLegend(offset=(10, 5), colCount=2)
    legend.addItem(pg.BarGraphItem(x=[0], height=[0], width=0, brush=measured_colour), "measured peak")
    if est_h:
        legend.addItem(pg.BarGraphItem(x=[0], height=[0], width=0, brush=estimate_colour), "static estimate")
    lines = [f"Batch {result.get('batch')}, {result.get('device')} ({result.get('measured_with', '')})."]
    base = measured[modes.index("standard")] if "standard" in modes else 0
    for m, v in zip(modes, measured):
        pct = f", {v / base * 100:.0f} % of standard's" if base and m != "standard" else ""
        lines.append(f"{m}: peak {human_bytes(int(v))}{pct}")
    plot_theme.style(plot)
    return plot, "\n".join(lines)


def gradcheck_widget(result: dict[str, Any]) -> tuple[QWidget, str]:
    rows = gradcheck_bars(result)
    tol = float(result.get("tolerance") or 1e-10)
    # Over tolerance is said in words and by a hatch, not by red against green alone (one brown to a
    # red-green colour-blind reader: the two bar colours are 11 CIE76 units apart as a deuteranope sees them)
    names = [f"{OVER} {n}" if e > tol else n for n, e in rows]
    logs = [math.log10(max(e, FLOOR)) for _n, e in rows]
    lo = math.floor(math.log10(FLOOR))
    plot = pg.PlotWidget(axisItems={"left": _NameTicks(names, orientation="left"),
                                    "bottom": _LogTicks(orientation="bottom")})
    plot.setBackground(None)
    c = theme.colors()  # (the fixed #59a14f of an agreeing bar was 2.9:1 on the light window)
    brushes = [_over_brush(c.error) if e > tol else pg.mkBrush(c.ok) for _n, e in rows]
    plot.addItem(pg.BarGraphItem(x0=[lo] * len(rows), width=[v - lo for v in logs], y=list(range(len(rows))),
                                 height=0.7, brushes=brushes, pens=[pg.mkPen(b.color()) for b in brushes]))
    if any(e > tol for _n, e in rows):
        legend = plot.addLegend(offset=(-10, 5), colCount=2)
        legend.addItem(pg.BarGraphItem(x=[0], height=[0], width=0, brush=pg.mkBrush(c.ok)), "within tolerance")
        legend.addItem(pg.BarGraphItem(x=[0], height=[0], width=0, brush=_over_brush(c.error)),
                       f"{OVER} over tolerance")
    plot.addItem(pg.InfiniteLine(pos=math.log10(tol), angle=90, pen=pg.mkPen(c.error, style=Qt.PenStyle.DashLine),
                                 label=f"tolerance {tol:g}",
                                 labelOpts={"position": 0.95, "color": theme.colors().text}))
    plot.setLabel("bottom", "normalised disagreement with standard autograd (log scale; exact = 1e-20)")
    plot.getAxis("bottom").set_short_titles(["disagreement with standard autograd (log scale)",
                                            "disagreement (log scale)", "disagreement"])
    plot.getPlotItem().invertY(True)
    plot_theme.style(plot)
    plot.setMinimumHeight(min(900, 60 + 18 * len(rows)))
    # Room for the bars beside the names: the window could be narrowed until the view was 8 px wide
    widest = max((QFontMetricsF(plot.font()).horizontalAdvance(n) for n in names), default=0.0)
    plot.setMinimumWidth(min(MAX_NAMES_PX, math.ceil(widest)) + AXIS_PX + VIEW_PX)
    ok = "agree" if result.get("ok") else "DISAGREE"
    text = (f"{result.get('mode', 'reversible')} vs standard gradients {ok}: worst {result.get('max_error', 0):.2g} "
            f"(tolerance {tol:g}, {result.get('dtype')}, batch {result.get('batch')}); max inversion error "
            f"{_measured(result.get('max_inversion_error'))}.")
    if result.get("checkpoint"):
        step = result.get("step")
        text += f"\nAt the weights of {result['checkpoint']}" + (f" (step {step})." if step is not None else ".")
    batch = result.get("input_batch")
    if isinstance(batch, dict) and batch.get("describe"):  # (the project's data, or why a random batch)
        text += f"\nInputs: {batch['describe']}."
    failures = result.get("failures") or []
    if failures:
        text += "\n" + "\n".join(str(f) for f in failures[:8])
    return plot, text


class SummaryLabel(QLabel):
    """A word-wrapped summary that keeps the height its lines need at its width.

    A plain wrapped QLabel tells its window's layout a minimum height for some other width: a
    narrow window (or larger text) wrapped the summary to more lines than that, and the layout,
    unable to shrink the plot below its minimum, laid the summary over the plot's axis labels."""

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        needed = self.heightForWidth(self.width())
        if needed > 0 and needed != self.minimumHeight():
            self.setMinimumHeight(needed)  # (the window grows to give the lines their room)


class DiagnosticsDialog(QDialog):
    """A non-modal window with one diagnostic drawn and summarised."""

    def __init__(self, title: str, kind: str, result: dict[str, Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setObjectName(f"diagnostics_{kind}")
        self.data = result
        layout = QVBoxLayout(self)
        self.summary = SummaryLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        if result.get("error"):
            self.plot = None
            self.summary.setText(str(result["error"]))
        else:
            self.plot, text = memory_widget(result) if kind == "memory" else gradcheck_widget(result)
            self.summary.setText(text)
            layout.addWidget(self.plot, 1)
        layout.addWidget(self.summary)
        resize_within_screen(self, 820, 520)  # a 1366x768 laptop at 150 % has 910x512 points


def _measured(value: Any) -> str:
    """A figure of a gradcheck result, or "not measured" where it is null."""
    return "not measured" if value is None else f"{value:.2g}"
