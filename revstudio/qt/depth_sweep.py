"""Memory vs Depth in the Memory tab: the peak of one training step per mode as the project's
Repeat node runs more copies, measured beside the estimate, with each mode's growth per added
block in the legend.

"Memory vs Depth" runs ``revstudio memory --depth ... --json`` (``clicmd.memory_depth``) on a
snapshot of the project in a child process (``child_json.ChildJson``) at the Memory tab's batch,
device and precision; the GUI never waits and Cancel stops it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import QComboBox, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from revstudio.diagnostics.depth_sweep import (
    DepthError,
    parse_depths,
    pick_repeat,
    repeat_nodes,
    signed_bytes,
)
from revstudio.diagnostics.estimate import fmt_bytes
from revstudio.qt.child_json import PROJECT, ChildJson
from revstudio.qt.document import Document
from revstudio.qt.plots import plot_theme
from revstudio.qt.plots.bytes_axis import BytesAxis
from revstudio.qt.plots.legend_fit import LineSample, fit_legend, place_legend
from revstudio.qt.plots.metric_plot import PALETTE
from revstudio.qt.plots.plot_widget import PlotWidget

MODES = ("standard", "checkpoint", "reversible")
COLOURS = dict(zip(MODES, (PALETTE[1], PALETTE[2], PALETTE[0])))
DEFAULT_DEPTHS = "1,2,4,8"


def per_block(value: Any) -> str:
    """'+64.0 KiB/block' from a bytes-per-block slope (None: '-')."""
    return signed_bytes(value, fmt_bytes) + ("/block" if isinstance(value, (int, float)) else "")


class SweepPlot(PlotWidget):
    """The sweep's plot, asking for a short panel's room: pyqtgraph's 600 x 480 hint made the
    Memory tab (heights for its wrapped words' widths) taller than the Output panel, the plot out
    of sight below its buttons."""

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(420, 200)


class DepthSweep(QWidget):
    """The sweep's plot and words (shown once a sweep is asked for); its controls (``depths``, ``node``, ``button``) sit in the
    Memory tab's row of buttons. ``settings()`` gives the tab's --batch/--device/--precision."""

    finished = Signal()  # a sweep came back (or failed or was cancelled: see ``message``)
    running_changed = Signal(bool)

    def __init__(self, document: Document, settings: Callable[[], list[str]],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.settings = settings
        self.child = ChildJson("depth sweep", self)
        self.child.finished.connect(self._on_finished)
        self.result: dict[str, Any] | None = None
        self.message = ""
        self.curves: dict[str, tuple[list[float], list[float]]] = {}  # "standard measured": (xs, ys)

        self.depths = QLineEdit(DEFAULT_DEPTHS)
        self.depths.setAccessibleName("Depths to measure")
        self.depths.setMaximumWidth(110)
        self.depths.setToolTip("The Repeat node's times to measure, with commas (e.g. 1,2,4,8,16)")
        self.node = QComboBox()
        self.node.setAccessibleName("Repeat node to vary")
        self.node.setToolTip("The Repeat node whose times the sweep varies")
        self.button = QPushButton("Memory vs Depth")
        self.button.setToolTip("Measure one training step per mode at each depth of the project's Repeat node "
                               "(revstudio memory --depth, in a separate process) and draw peak against depth")
        self.button.clicked.connect(self.run)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.plot = SweepPlot(axisItems={"left": BytesAxis("left")})
        self.plot.setBackground(None)
        self.plot.setMinimumHeight(180)
        self.plot.setLabel("left", "peak of one step", units="B")
        self.plot.setLabel("bottom", "copies of the Repeat node (times)")
        self.plot.getPlotItem().getViewBox().setMouseEnabled(x=False, y=False)
        self.plot.getPlotItem().getViewBox().sigResized.connect(lambda _vb: self.fit_legend())
        self._legend_corner: tuple[float, float] | None = None
        self.plot.setToolTip("Solid: measured peak; dashed: the static estimate; the legend gives each mode's "
                             "growth per added block (least squares)")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.status)
        self.plot.hide()
        self.hide()  # beside the Memory tab's chart once a sweep is asked for
        document.estimateChanged.connect(self.refresh_nodes)
        document.graphReplaced.connect(self.refresh_nodes)
        self.refresh_nodes()

    # ---- which Repeat -----------------------------------------------------------
    def refresh_nodes(self) -> None:
        """The Repeat nodes to choose between (shown only where there are several)."""
        names = repeat_nodes(self.document.graph)
        current = self.node.currentText()
        if [self.node.itemText(i) for i in range(self.node.count())] != names:
            self.node.blockSignals(True)
            self.node.clear()
            self.node.addItems(names)
            if current in names:
                self.node.setCurrentText(current)
            self.node.blockSignals(False)
        self.node.setVisible(len(names) > 1)

    # ---- running ---------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.child.running

    def run(self) -> None:
        """Start the sweep (never blocks); bad depths or no Repeat node are said in the status line."""
        if self.child.running:
            return
        from revstudio.qt.report_facts import graph_problem

        graph = self.document.graph
        problem = graph_problem(graph, self.document.current_report(), "measuring memory against depth")
        try:
            if problem:
                raise DepthError(problem)
            depths = parse_depths(self.depths.text())
            chosen = self.node.currentText() if len(repeat_nodes(graph)) > 1 else None
            node = pick_repeat(graph, chosen)
        except DepthError as exc:
            self._say(f"not measured: {str(exc).replace('--depth ', '').replace('--depth-node ', '')}")
            return
        args = ["memory", PROJECT, "--json", "--depth", ",".join(map(str, depths)), "--depth-node", node,
                *self.settings()]
        self.child.start(graph, args)
        self.button.setEnabled(False)
        self._say(f"measuring one training step per mode with {node} at times {', '.join(map(str, depths))}…")
        self.running_changed.emit(True)

    def cancel(self) -> None:
        self.child.cancel()

    def _say(self, text: str) -> None:
        self.message = text
        self.status.setText(text)
        self.show()

    def _on_finished(self) -> None:
        self.button.setEnabled(True)
        self.running_changed.emit(False)
        if self.child.result is None:
            self._say(self.child.message)
        else:
            self.result = self.child.result
            self.draw(self.result)
            self.message = ""
        self.finished.emit()

    # ---- drawing ---------------------------------------------------------------
    def fit_legend(self) -> None:
        """The legend whole inside the plot, in the corner its lines leave clearest."""
        item = self.plot.getPlotItem()
        if item.legend is None:
            return
        fit_legend(item)
        self._legend_corner = place_legend(item, item.listDataItems(), self._legend_corner)

    def draw(self, data: dict[str, Any]) -> None:
        """Peak against depth per mode: measured solid, estimate dashed, growth per block in the legend."""
        plot = self.plot
        plot.clear()
        item = plot.getPlotItem()
        if item.legend is not None:
            item.legend.scene().removeItem(item.legend)
            item.legend = None
        legend = plot.addLegend(offset=(8, 8), sampleType=LineSample)
        rows = data.get("rows") or []
        xs = [float(r["depth"]) for r in rows]
        growth = data.get("bytes_per_block") or {}
        self.curves = {}
        any_estimate = False
        for mode in MODES:
            colour = COLOURS[mode]
            real = [float(r["modes"][mode]["peak_bytes"]) for r in rows]
            self.curves[f"{mode} measured"] = (xs, real)
            slope = (growth.get(mode) or {}).get("measured")
            curve = plot.plot(xs, real, pen=pg.mkPen(colour, width=2), symbol="o", symbolSize=6,
                              symbolBrush=colour, symbolPen=colour)
            legend.addItem(curve, f"{mode} {per_block(slope)}")
            est = [r["modes"][mode].get("estimate_peak_bytes") for r in rows]
            if est and all(isinstance(e, (int, float)) for e in est):
                any_estimate = True
                self.curves[f"{mode} estimate"] = (xs, [float(e) for e in est])
                plot.plot(xs, [float(e) for e in est],
                          pen=pg.mkPen(colour, width=1.5, style=Qt.PenStyle.DashLine))
        if any_estimate:
            sample = pg.PlotDataItem([0], [0], pen=pg.mkPen(PALETTE[8], width=1.5, style=Qt.PenStyle.DashLine))
            legend.addItem(sample, "estimate (dashed)")
        plot.setLabel("bottom", f"copies of {data.get('node', 'the Repeat node')} (times)")
        # a tick at each depth measured, none between (a depth of 2.5 copies means nothing)
        plot.getPlotItem().getAxis("bottom").setTicks([[(x, f"{x:g}") for x in xs]])
        top = max([v for _x, ys in self.curves.values() for v in ys] + [1.0])
        plot.setYRange(0, top * 1.3, padding=0)  # (room for the legend above the lines, where it can)
        if xs:
            plot.setXRange(min(xs), max(xs), padding=0.05)
        plot_theme.style(plot)
        plot.show()
        self._legend_corner = None
        self.fit_legend()
        precision = str(data.get("precision") or "fp32")
        cast = "" if precision == "fp32" else f", {precision} autocast"
        note = data.get("estimate_note")
        self.status.setText(f"peak against depth at batch {data.get('batch')}, {data.get('device')}{cast} "
                            f"({data.get('measured_with')}); growth per added block: "
                            + ", ".join(f"{m} {per_block((growth.get(m) or {}).get('measured'))}" for m in MODES)
                            + (f"; {note}" if isinstance(note, str) and note else ""))


__all__ = ["DepthSweep", "per_block"]
