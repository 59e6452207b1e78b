"""The Memory panel: measured beside estimated, and the largest batch that fits a device.

"Measure Memory" runs ``revstudio memory --json`` on a snapshot of the project in
a child process (``child_json.ChildJson``): torch never loads into the editor
and the GUI never waits. The reply is drawn as a small bar chart per mode
(estimated and measured kept and peak) with the estimate's error. "Fits on my
device" turns a memory size (typed, like "8 GiB", or the GPU the measurement
found) into the largest batch per mode from ``max_batches_that_fit``. "Memory vs Depth"
(``depth_sweep``) measures the same at several depths of the project's Repeat node.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QProcess, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from revstudio.diagnostics.budget import parse_bytes as parse_amount
from revstudio.diagnostics.budget import project_budget
from revstudio.diagnostics.estimate import LOW_PRECISIONS, precision_note
from revstudio.qt import report_facts as rf
from revstudio.qt.child_json import PROJECT, ChildJson
from revstudio.qt.document import Document
from revstudio.qt.flow_layout import FlowLayout
from revstudio.qt.memory_figures import ORDER, BatchField, batch_label, estimate_of


def parse_bytes(text: str) -> int:
    """'8 GiB', '8GB', '512 MiB', '1.5e9' -> bytes, read as a memory budget is; ValueError naming
    what is wrong (a device has some memory: 0 is refused here)."""
    value = parse_amount(text or "")
    if value < 1:
        raise ValueError(f"{text!r} is too small; type the device's memory, e.g. 8 GiB")
    return value


class BarChart(QWidget):
    """Per mode: estimated and measured kept, estimated and measured peak, as bars."""

    SERIES = (("estimate kept", "kept", "est"), ("measured kept", "kept", "real"),
              ("estimate peak", "peak", "est"), ("measured peak", "peak", "real"))
    COLORS = ("#7fb3ff", "#2f6fdb", "#ffb36b", "#d9731f")
    # on the light theme the pale estimate bars were 2.1:1 and 1.8:1 on the window (3:1 needed)
    LIGHT_COLORS = ("#4a7fe0", "#1f4fb0", "#c46a12", "#9a4f10")

    def colors(self) -> tuple[str, ...]:
        """The bars' colours for the window colour they are drawn on."""
        return self.COLORS if self.palette().window().color().lightness() < 128 else self.LIGHT_COLORS

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: dict[str, dict[str, dict[str, int]]] = {}
        self.setMinimumHeight(150)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def set_rows(self, rows: dict[str, dict[str, dict[str, int]]]) -> None:
        """``rows[mode]["kept"|"peak"]["est"|"real"]`` in bytes."""
        self.rows = rows
        self.update()

    def paintEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        text = self.palette().windowText().color()
        colors = self.colors()
        if not self.rows:
            painter.setPen(text)
            # wrapped: one centred line lost both its ends in a narrow Output panel
            painter.drawText(self.rect().adjusted(8, 0, -8, 0),
                             int(Qt.AlignmentFlag.AlignCenter) | int(Qt.TextFlag.TextWordWrap),
                             "Press Measure Memory to see measured figures beside the estimate")
            return
        top = max((v for r in self.rows.values() for part in r.values() for v in part.values()), default=1) or 1
        legend_h, label_h = 18, 18
        area = QRectF(8, legend_h + 4, self.width() - 16, self.height() - legend_h - label_h - 8)
        group_w = area.width() / max(1, len(self.rows))
        bar_w = max(4.0, group_w / (len(self.SERIES) + 2))
        shown = [(i, name) for i, (name, part, kind) in enumerate(self.SERIES)
                 if any(kind in r.get(part, {}) for r in self.rows.values())]  # (a bf16 step: no estimate)
        for k, (i, name) in enumerate(shown):  # legend
            x = 8 + k * 120
            painter.fillRect(QRectF(x, 4, 10, 10), QColor(colors[i]))
            painter.setPen(text)
            painter.drawText(QRectF(x + 14, 0, 104, 18), Qt.AlignmentFlag.AlignVCenter, name)
        for g, (mode, parts) in enumerate(self.rows.items()):
            x0 = area.left() + g * group_w + bar_w
            for i, (_name, part, kind) in enumerate(self.SERIES):
                value = parts.get(part, {}).get(kind, 0)
                h = area.height() * value / top
                painter.fillRect(QRectF(x0 + i * bar_w, area.bottom() - h, bar_w - 2, h), QColor(colors[i]))
            painter.setPen(QPen(text))
            painter.drawText(QRectF(area.left() + g * group_w, area.bottom() + 2, group_w, label_h),
                             Qt.AlignmentFlag.AlignHCenter, mode)


class MemoryPanel(QWidget):
    """Bottom-panel tab: measure the project's memory, and what batch fits a device."""

    measured = Signal()  # a measurement arrived (or failed: see ``message``)

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.child = ChildJson("measurement", self)
        self.child.finished.connect(self._on_child)
        self.result: dict[str, Any] | None = None
        self.message = ""
        self.detected_bytes: int | None = None

        self.batch = BatchField(document, self)
        self.device = QComboBox()
        self.device.addItems(["cpu", "auto"])
        self.device.setToolTip("cpu: exact live-tensor accounting; auto: the GPU when there is one "
                               "(allocator statistics), which also detects its memory")
        self.precision = QComboBox()
        self.precision.addItems(["fp32", *LOW_PRECISIONS])
        project = str((document.graph.training or {}).get("precision") or "fp32")
        self.precision.setCurrentText(project if project in LOW_PRECISIONS else "fp32")
        self.precision.setToolTip("The precision the steps are measured in: fp32, or bf16/fp16 autocast as "
                                  "Train runs them (fp16 needs CUDA). The estimate models fp32 steps only, "
                                  "so bf16/fp16 measurements stand without one")
        self.measure_button = QPushButton("Measure Memory")
        self.measure_button.setToolTip("Run one training step per mode in a separate process "
                                       "(revstudio memory) at this batch and show it beside the estimate")
        self.measure_button.clicked.connect(self.measure)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.setEnabled(False)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.chart = BarChart()
        self.table = QLabel("")
        self.table.setTextFormat(Qt.TextFormat.RichText)
        self.table.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.budget = QLineEdit()
        self.budget.setPlaceholderText("device memory, e.g. 8 GiB")
        self.budget.setToolTip("The memory of the device to train on (e.g. 8 GiB, 24 GB); "
                               "Measure with device 'auto' fills in a detected GPU")
        self.budget.editingFinished.connect(self.update_fits)
        self.fits = QLabel("")
        self.fits.setWordWrap(True)
        from revstudio.qt.depth_sweep import DepthSweep

        self.depth_sweep = DepthSweep(document, self._settings)
        self.depth_sweep.running_changed.connect(self._sync_cancel)

        # wraps in a narrow Output panel (at 150 % on a 1366x768 laptop the one row was 568 px
        # wide: the panel scrolled sideways, Cancel and the progress words out of sight)
        row = FlowLayout()
        for w in (self.batch, self.device, self.precision, self.measure_button, self.depth_sweep.depths,
                  self.depth_sweep.node, self.depth_sweep.button, self.cancel_button):
            row.addWidget(w)
        fit_row = QHBoxLayout()
        fit_row.addWidget(QLabel("Fits on my device:"))
        fit_row.addWidget(self.budget)
        fit_row.addWidget(self.fits, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.status)
        body = QHBoxLayout()
        body.addWidget(self.chart, 3)
        body.addWidget(self.table, 2)
        body.addWidget(self.depth_sweep, 4)  # (hidden until a sweep is asked for)
        layout.addLayout(body, 1)
        layout.addLayout(fit_row)
        # the fits price the walked estimate: they follow it (at once, or after the edit's first paint)
        document.estimateChanged.connect(self._on_analysis)
        document.estimateWaiting.connect(self._fits_waiting)

    # ---- measuring -----------------------------------------------------------
    @property
    def process(self) -> QProcess | None:
        """The measurement's child process while it runs."""
        return self.child.process

    def measure(self) -> None:
        """Start ``revstudio memory --json`` on a snapshot of the project (never blocks)."""
        if self.child.running:
            return
        from revstudio.qt.report_facts import graph_problem

        problem = graph_problem(self.document.graph, self.document.current_report(), "measuring memory")
        if problem:  # (the child would refuse it too, naming the temporary snapshot it was given)
            self.status.setText(f"not measured: {problem}")
            return
        batch = self.batch.value()
        self.child.start(self.document.graph, ["memory", PROJECT, "--json", *self._settings(), "--repeat", "3"])
        self._batch = batch
        self.measure_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.status.setText(f"measuring one training step per mode at batch {batch}…")

    def _settings(self) -> list[str]:
        """The batch, device and precision a measurement and a depth sweep run at."""
        return ["--batch", str(self.batch.value()), "--device", self.device.currentText(),
                "--precision", self.precision.currentText()]

    def _sync_cancel(self, *_: object) -> None:
        self.cancel_button.setEnabled(self.child.running or self.depth_sweep.running)
        self._arrange()

    def _arrange(self) -> None:
        """The depth sweep takes the room of a chart with nothing measured yet (its hint only): beside
        it, in a 1000 px window, the sweep's plot was 208 px wide."""
        shown = bool(self.chart.rows) or self.depth_sweep.isHidden()
        self.chart.setVisible(shown)
        self.table.setVisible(shown)

    def cancel(self) -> None:
        """Stop the measurement and the depth sweep that run."""
        self.child.cancel()
        self.depth_sweep.cancel()

    def _on_child(self) -> None:
        self._done(self.child.result, self.child.message)

    def _done(self, data: dict[str, Any] | None, message: str) -> None:
        self.measure_button.setEnabled(True)
        self._sync_cancel()
        self.message = message
        if data is not None:
            self.result = data
            detected = data.get("device_memory_bytes")
            if isinstance(detected, int) and detected > 0:
                self.detected_bytes = detected
                self.budget.setText(rf.human_bytes(detected).replace(" ", " "))
            self._show_result()
            self.update_fits()
        else:
            self.status.setText(message)
        self._arrange()
        self.measured.emit()

    def _show_result(self) -> None:
        data = self.result or {}
        est = data.get("estimate", {}).get("modes", {})
        rows: dict[str, dict[str, dict[str, int]]] = {}
        lines = ["<table cellspacing='0' cellpadding='3'><tr><th align='left'>mode</th><th>peak</th><th>estimate</th>"
                 "<th>error</th><th>kept</th><th>estimate</th><th>error</th></tr>"]
        for mode in ORDER:
            m = data.get("modes", {}).get(mode)
            e = est.get(mode, {})
            if not m:
                continue
            real_peak, real_kept = int(m["peak_bytes"]), int(m["kept_bytes"])
            rows[mode] = {"kept": {"real": real_kept}, "peak": {"real": real_peak}}
            cells = [rf.human_bytes(real_peak), "–", "–", rf.human_bytes(real_kept), "–", "–"]
            if e:  # (none for a bf16/fp16 step: the estimate models fp32 steps only)
                est_peak, est_kept = int(e.get("peak_bytes", 0)), int(e.get("kept_bytes", e.get("activation_bytes", 0)))
                rows[mode]["kept"]["est"], rows[mode]["peak"]["est"] = est_kept, est_peak
                cells[1:3] = [rf.human_bytes(est_peak), _err(est_peak, real_peak)]
                cells[4:6] = [rf.human_bytes(est_kept), _err(est_kept, real_kept)]
            lines.append(f"<tr><td>{mode}</td>" + "".join(f"<td align='right'>{c}</td>" for c in cells) + "</tr>")
        lines.append("</table>")
        self.chart.set_rows(rows)
        self.table.setText("".join(lines))
        note = data.get("estimate_note")
        precision = str(data.get("precision") or "fp32")
        cast = "" if precision == "fp32" else f", {precision} autocast"
        self.status.setText(f"measured at batch {data.get('batch')}, {data.get('device')}{cast} "
                            f"({data.get('measured_with')})" + ("; estimate at the same batch" if est else "")
                            + (f"; {note}" if isinstance(note, str) and note else ""))

    # ---- fits on my device -------------------------------------------------------
    def _on_analysis(self) -> None:
        if self.budget.text().strip():
            self.update_fits()

    def _fits_waiting(self) -> None:
        from revstudio.qt.memory_figures import show_waiting

        show_waiting(self.fits, True)

    def update_fits(self) -> None:
        """The largest batch per mode that fits the typed (or detected) device memory."""
        text = self.budget.text().strip()
        if not text:
            self.fits.setText("")
            return
        try:
            budget = parse_bytes(text)
        except ValueError as exc:
            self.fits.setText(str(exc))
            return
        from revstudio.qt.memory_figures import show_waiting

        show_waiting(self.fits, False)
        report = self.document.current_report()  # (a budget typed while an edit's figures are walked)
        est = estimate_of(report)
        if est is None:
            self.fits.setText("no estimate yet: fix the graph's errors first")
            return
        from revstudio.diagnostics.estimate_fit import UNDER_BUDGET, max_batches_that_fit

        training = self.document.graph.training
        optimizer = training.get("optimizer", "adam")
        optimizer = optimizer if optimizer in ("sgd", "adam", "adamw") else None
        kept = project_budget(training)
        # runs after every edit while a budget is typed: one search for all modes (shared estimates)
        self.fit_results = max_batches_that_fit(self.document.graph, report, budget, ORDER, optimizer=optimizer,
                                                device=self._fit_device(), memory_budget=kept)
        names = {UNDER_BUDGET: f"reversible with its {rf.human_bytes(kept or 0)} budget"}
        parts = [f"{names.get(mode, mode)} {'does not fit' if n is None else f'{n:,}'}"
                 for mode, n in self.fit_results.items()]
        low = precision_note(training.get("precision"))
        self.fits.setText(f"largest batch in {rf.human_bytes(budget)}: " + ", ".join(parts)
                          + f" ({est.dtype}; weights, input batch, gradients"
                          + (f" and {optimizer} state" if optimizer else "") + " counted)"
                          + (f"; {training.get('precision')} runs: {low}" if low else ""))

    fit_results: dict[str, int | None] = {}

    def _fit_device(self) -> str:
        """The device kind the fit is priced for: the measured one where a measurement found a
        GPU (its memory is the one filled in), else the project's ``training.device``."""
        from revstudio.diagnostics.check import training_device

        measured = str((self.result or {}).get("device", ""))
        return "cuda" if measured.startswith("cuda") else training_device(self.document.graph)


def _err(est: int, real: int) -> str:
    return f"{est / real - 1:+.0%}" if real else "–"


__all__ = ["BarChart", "MemoryPanel", "batch_label", "parse_bytes"]
