"""The Plots tab: loss, accuracy, memory, gradient check and throughput of the shown runs.

The panel draws the live run and any runs selected in the Runs tab (their
curves overlaid, one colour per run). A 20 Hz timer brings the plots up to
date from the runs' ring buffers; nothing is drawn per row, so a fast run
never floods the event loop. The memory plot carries the static peak
estimates of the run's mode and of standard mode as reference lines; the
gradient-check plot a warning band, and a sentence when a region enters it.
"""
from __future__ import annotations

import math
import time
import zlib
from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from revstudio.qt import theme
from revstudio.qt.plots.colour_vision import apart, difference
from revstudio.qt.plots.fitted_label import FittedLabel
from revstudio.qt.plots.metric_plot import PALETTE, Channel, MetricPlot
from revstudio.qt.plots.ref_labels import place_ref_labels
from revstudio.qt.plots.rows import GRAD_PREFIX, INV_PREFIX, RunData
from revstudio.qt.report_facts import human_bytes
from revstudio.qt.settings import Settings
from revstudio.qt.training.words import in_app_words
from revstudio.training.inverse_words import inverse_words

REFRESH_MS = 50  # 20 Hz (STYLE point 11)
# Plots redrawn per tick until this is spent, counting the paint each one will cause (its last
# paint's cost); the rest go first next tick. So one turn of the event loop stays short.
FRAME_BUDGET_MS = 14
# Relative gradient disagreement above which a region is flagged: float32 round-off in a rebuilt
# activation stays near 1e-6..1e-5, so 1e-4 is gradcheck's own float32 tolerance. The in-run check
# runs in the model's own dtype whatever the run's precision (autocast off): one level for every run.
WARN_LEVEL = 1e-4
DEFAULT_SMOOTHING = 0.6  # the slider's weight until the user moves it (then it is remembered)
# The slider: 0.00 to 0.99 in steps of 0.01, then 0.991 to 0.999 in steps of 0.001 (TensorBoard goes to
# 0.999; a run logged every step of 100,000 wants smoothing over hundreds of rows, and 0.99 is 100).
SLIDER_FINE = 99   # the position of 0.99, where the steps turn fine
SLIDER_TOP = SLIDER_FINE + 9  # 0.999
MAX_COLUMNS = 3  # of plots, where the tab is wide enough for them (fewer in a narrow window)
GRID_SPACING = 6


class PlotsPanel(QWidget):
    """The grid of live plots with the shared x-axis and smoothing controls."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("plotsPanel")
        self.runs: list[RunData] = []
        self.colours: dict[str, str] = {}
        # Smoothing, x axis and each plot's log y are kept as last set (TensorBoard keeps its slider):
        # a user who reads loss at 0.9 on a log axis does not set it again in every session.
        self._settings = Settings()
        self.weight = self._settings.plots_smoothing(DEFAULT_SMOOTHING)
        self.axis_box = QComboBox()
        self.axis_box.addItem("step", "step")
        self.axis_box.addItem("epoch", "epoch")
        self.axis_box.addItem("wall time", "time")
        self.axis_box.setCurrentIndex(max(0, self.axis_box.findData(self._settings.plots_axis("step"))))
        self.axis_box.setToolTip("The x axis of every plot")
        self.axis_box.currentIndexChanged.connect(self._axis_changed)
        self.smooth_slider = QSlider(Qt.Orientation.Horizontal)
        self.smooth_slider.setRange(0, SLIDER_TOP)
        self.smooth_slider.setValue(slider_position(self.weight))
        self.smooth_slider.setMaximumWidth(160)
        self.smooth_slider.setToolTip("Smoothing (exponential moving average, debiased); the raw curve stays faint "
                                      "behind the smoothed one")
        self.smooth_slider.valueChanged.connect(self._smoothing_changed)
        self.smooth_label = QLabel(weight_text(self.weight))
        self.shown_label = FittedLabel()  # shortened in a narrow tab, whole in its tooltip: it set the least width
        self._say("No run yet: press Train (F5) to train this project; the curves appear here.")
        self.shown_label.setObjectName("plotsShown")
        self.warning = QLabel("")
        self.warning.setObjectName("plotsWarning")
        self.warning.setWordWrap(True)
        self.warning.setProperty("tone", "error")  # the theme colours it, readable in both
        self.warning.hide()
        controls = QHBoxLayout()
        controls.addWidget(QLabel("x axis"))
        controls.addWidget(self.axis_box)
        controls.addSpacing(12)
        controls.addWidget(QLabel("smoothing"))
        controls.addWidget(self.smooth_slider)
        controls.addWidget(self.smooth_label)
        controls.addSpacing(12)
        controls.addWidget(self.shown_label, 1)

        # (short: the word of the line style's key in an overlaid legend, a third of a window wide)
        self.loss = MetricPlot("Loss", [Channel("loss", "loss", short="train"),
                                        Channel("val_loss", "val loss", dashed=True, short="val")], "loss")
        self.accuracy = MetricPlot("Accuracy", [Channel("accuracy", "accuracy", short="train"),
                                                Channel("val_accuracy", "val accuracy", dashed=True, short="val")],
                                   "accuracy")
        self.memory = MetricPlot("Memory", [Channel("peak_bytes", "measured peak")], "peak", units="B")
        self.gradcheck = MetricPlot("Gradient check", [Channel(GRAD_PREFIX, "grad disagreement", prefix=True,
                                                               short="grad"),
                                                       Channel(INV_PREFIX, "inversion error", dashed=True,
                                                               prefix=True, short="inversion")],
                                    "relative error", log_y=True, floor=1e-12)
        self.throughput = MetricPlot("Throughput", [Channel("samples_per_s", "samples/s")], "samples/s")
        self.plots = [self.loss, self.accuracy, self.memory, self.gradcheck, self.throughput]
        for plot in self.plots:
            plot.set_log_y(self._settings.plot_log_y(plot.objectName(), plot.log_y))
        self._memory_refs = [pg.InfiniteLine(angle=0, movable=False, label=text,
                                             labelOpts={"position": 0.02, "anchors": [(0, 1), (0, 1)]})
                             for text in ("estimate", "standard")]
        self._colour_memory_refs()
        self._memory_texts = ["est. {mode}", "est. standard"]  # short: the plot may be a third of a window
        self._memory_values: list[float | None] = [None, None]
        for line in self._memory_refs:
            self.memory.plot.addItem(line, ignoreBounds=False)
            line.hide()
        # above its line, or below it where the measured peak would strike it through (again
        # whenever the range moves: the y range is framed after the lines are drawn)
        memory_box = self.memory.plot.getPlotItem().getViewBox()
        memory_box.sigRangeChanged.connect(lambda *_a: self._place_memory_labels())
        memory_box.sigResized.connect(lambda *_a: self._place_memory_labels())
        self._band = pg.LinearRegionItem(orientation="horizontal", movable=False, brush=pg.mkBrush(225, 87, 89, 40),
                                         pen=pg.mkPen(None))
        self._band.setZValue(-10)
        self.gradcheck.plot.addItem(self._band, ignoreBounds=True)
        self._band.hide()
        self._band_level: float | None = None
        self.loss.on_refresh.append(self._label_loss)
        # In the view box's own coordinates (not the data's), so it stays in the corner at any range.
        self.accuracy_note = pg.TextItem("", anchor=(0, 0))
        self.accuracy_note.setParentItem(self.accuracy.plot.getPlotItem().getViewBox())
        self.accuracy_note.setPos(6, 4)
        self.accuracy_note.hide()
        self.accuracy.on_refresh.append(self._note_accuracy)
        self.memory.on_refresh.append(self._draw_memory_refs)
        self.gradcheck.on_refresh.append(self._draw_band)
        for plot in self.plots:
            plot.png_action.triggered.connect(lambda _c=False, p=plot: self._export(p, "png"))
            plot.csv_action.triggered.connect(lambda _c=False, p=plot: self._export(p, "csv"))
            plot.log_box.toggled.connect(lambda on, p=plot: self._log_changed(p, on))

        self.grid = QGridLayout()
        self.grid.setSpacing(GRID_SPACING)
        self.columns = 0
        layout = self._layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(controls)
        layout.addWidget(self.warning)
        layout.addLayout(self.grid, 1)
        self._place(MAX_COLUMNS)
        # As narrow as one column of plots: the tab's scroll area then hands this panel the width it
        # has, and the grid takes as many columns as fit it (three at 1280 px, one at 900) instead of
        # laying three out past the tab's edge behind a horizontal scroll bar.
        self.setMinimumWidth(self._columns_width(1))
        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()
        self._seen_by: dict[int, tuple[int, ...]] = {}  # run versions each plot last drew
        self._next = 0

    def _say(self, text: str) -> None:
        self.shown_label.set_texts([text])
        self.shown_label.setToolTip(text)

    # ---- the grid -------------------------------------------------------------------
    def _columns_width(self, n: int) -> int:
        """The least width that shows ``n`` columns of plots whole."""
        margins = self.contentsMargins() + self._layout.contentsMargins()
        widest = max(plot.minimumSizeHint().width() for plot in self.plots)
        return n * widest + (n - 1) * GRID_SPACING + margins.left() + margins.right()

    def _place(self, n: int) -> None:
        """The plots in ``n`` columns, row by row."""
        if n == self.columns:
            return
        self.columns = n
        for plot in self.plots:
            self.grid.removeWidget(plot)
        for i, plot in enumerate(self.plots):
            self.grid.addWidget(plot, i // n, i % n)
        for c in range(MAX_COLUMNS):
            self.grid.setColumnStretch(c, 1 if c < n else 0)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        width = event.size().width()
        self._place(next((n for n in range(MAX_COLUMNS, 1, -1) if self._columns_width(n) <= width), 1))
        super().resizeEvent(event)

    # ---- what is shown ----------------------------------------------------------
    @property
    def axis(self) -> str:
        return str(self.axis_box.currentData())

    def set_runs(self, runs: Sequence[RunData]) -> None:
        """Show these runs (the live one first); each keeps its colour while it is shown."""
        self.runs = list(runs)
        # only the runs still shown keep the colour they had: one shown again later takes its own
        # (its name's), as in the next session, not whichever colour was free when it was last shown
        self.colours = {r.name: self.colours[r.name] for r in self.runs if r.name in self.colours}
        taken: set[str] = set()
        for run in self.runs:
            self.colours[run.name] = self._colour_for(run.name, taken)
            taken.add(self.colours[run.name])
            if run.weight != self.weight:
                run.set_weight(self.weight)
        if not self.runs:
            self._say("No run shown: press Train (F5), or select runs in the Runs tab.")
        elif len(self.runs) == 1:
            self._say(f"Run {self.runs[0].title} ({self.runs[0].status})")
        else:
            self._say(f"{len(self.runs)} runs overlaid: " + ", ".join(r.title for r in self.runs))
        self.refresh(force=True)
        if not self.runs:  # (the last run's axes stayed, steps and loss ranges of nothing drawn)
            for plot in self.plots:
                plot.reset_view()

    def _colour_for(self, name: str, taken: set[str]) -> str:
        """The run's colour: the one it had while it stays shown, unless a run shown before it in this
        set has it; else its own, a function of its name (its folder's), so a run has the same colour in
        every session; where a run shown before it has that, the next one round the palette no shown run
        has. Colours went round the palette by the order runs were first shown in a session, so the
        same run was blue one day and orange the next. A colour a red-green colour-blind reader cannot
        tell from a shown run's (green beside red, orange beside olive) counts as taken while another is
        left (colour_vision)."""
        mine = self.colours.get(name)
        if mine is not None and mine not in taken and all(apart(mine, c) for c in taken):
            return mine
        start = run_colour_index(name)
        order = PALETTE[start:] + PALETTE[:start]
        seen_apart = next((c for c in order if all(apart(c, t) for t in taken)), None)
        if seen_apart is not None:
            return seen_apart
        # none left apart from every shown run (four runs and more): the free one least like them
        free = [c for c in order if c not in taken] or order  # (more runs than colours: they repeat)
        return max(free, key=lambda c: min(difference(c, t) for t in taken))

    def _axis_changed(self, _index: int) -> None:
        self._settings.set_plots_axis(self.axis)
        self.refresh(force=True)

    def _log_changed(self, plot: MetricPlot, on: bool) -> None:
        self._settings.set_plot_log_y(plot.objectName(), on)
        self.refresh(force=True)

    def _smoothing_changed(self, value: int) -> None:
        self.weight = slider_weight(value)
        self.smooth_label.setText(weight_text(self.weight))
        self._settings.set_plots_smoothing(self.weight)
        for run in self.runs:
            run.set_weight(self.weight)
        self.refresh(force=True)

    def refresh(self, force: bool = False) -> int:
        """Redraw what changed since the last tick; returns the number of curves redrawn.

        A tick spends at most ``FRAME_BUDGET_MS`` on plots (round robin), their
        coming paints included: on a busy machine the plots take turns instead
        of holding up input. The first plot due is always redrawn.
        """
        seen = tuple(r.version for r in self.runs)
        if not force and not self.isVisible():
            return 0
        shown = [(r, self.colours.get(r.name, PALETTE[0])) for r in self.runs]
        t0 = time.thread_time()  # CPU time: the budget is the plots' work, not the machine's load
        redrawn = 0
        n = len(self.plots)
        painting = 0.0  # ms of paint the plots redrawn so far will cost
        done = 0
        for k in range(n):
            plot = self.plots[(self._next + k) % n]
            if not force and self._seen_by.get(id(plot)) == seen and not plot.dirty:
                continue
            expected = plot.refresh_ms + plot.plot.paint_ms
            if not force and done and (time.thread_time() - t0) * 1000 + painting + expected > FRAME_BUDGET_MS:
                self._next = (self._next + k) % n  # it goes first next tick
                break
            t1 = time.thread_time()
            redrawn += plot.refresh(shown, self.axis, self.weight)
            plot.refresh_ms = (time.thread_time() - t1) * 1000
            painting += plot.plot.paint_ms
            done += 1
            self._seen_by[id(plot)] = seen
        if redrawn or force:
            self._update_warning()
            if len(self.runs) == 1:
                self._say(f"Run {self.runs[0].title} ({self.runs[0].status})")
        return redrawn

    def _label_loss(self, plot: MetricPlot) -> None:
        """A flow's loss is its negative log-likelihood in bits per dimension: the axis says so
        where every shown run is a flow (``task`` of its started row)."""
        tasks = {r.info.get("task") for r in self.runs}
        label = "bits/dim" if tasks == {"flow"} else "loss"  # (short: the plot may be 150 px tall)
        if plot.plot.getAxis("left").labelText != label:
            plot.plot.setLabel("left", label)

    def _note_accuracy(self, plot: MetricPlot) -> None:
        """Where no shown run is a classification, the empty Accuracy plot says why."""
        tasks = {r.info.get("task") for r in self.runs}
        if not self.runs or not tasks <= {"flow", "regression"}:
            self.accuracy_note.hide()
            return
        what = "a flow" if tasks == {"flow"} else "regression" if tasks == {"regression"} else "these runs"
        self.accuracy_note.setText(f"no accuracy for {what}:\nsee Loss", color=theme.colors().muted)
        self.accuracy_note.show()

    # ---- reference lines, band, warning --------------------------------------------
    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        super().changeEvent(event)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.StyleChange) and hasattr(self, "_memory_refs"):
            self._colour_memory_refs()  # a theme switch

    def _colour_memory_refs(self) -> None:
        """The estimate lines and their words in the theme's ok and error colours (the fixed #59a14f
        and #e15759 read at 2.9:1 and 3.4:1 on the light theme)."""
        c = theme.colors()
        for line, colour in zip(self._memory_refs, (c.ok, c.error)):
            line.setPen(pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine))
            line.label.setColor(colour)

    def _draw_memory_refs(self, plot: MetricPlot) -> None:
        self._colour_memory_refs()  # (after a theme switch: every refresh passes here)
        run = self.runs[0] if self.runs else None
        info = run.info if run is not None else {}
        mode = str(info.get("mode") or "run's mode")
        if mode == "reversible" and (info.get("config") or {}).get("memory_budget") is not None:
            mode += "+budget"  # the estimate with the steps the budget keeps
        values = [info.get("estimate_bytes"), info.get("standard_estimate_bytes")]
        plot.y_marks = [float(v) for v in values if isinstance(v, (int, float)) and v > 0]  # framed with the curves
        for i, (line, value) in enumerate(zip(self._memory_refs, values)):
            if not isinstance(value, (int, float)) or value <= 0:
                line.hide()
                continue
            line.show()  # first: a hidden line's label keeps its old text (pyqtgraph)
            line.setValue(math.log10(value) if plot.log_y else float(value))
            line.label.setFormat(self._memory_texts[i].format(mode=mode) + f" {human_bytes(int(value))}")
        self._place_memory_labels()
        fraction = run.peak_fraction_of_standard() if run is not None else None
        unmodelled = info.get("estimate_note")
        if isinstance(unmodelled, str) and unmodelled:
            # (a mixed-precision run: the fp32 estimate's lines would be up to 3.6x off)
            precision = str((info.get("config") or {}).get("precision", ""))
            plot.note.set_texts([f"no estimate under {precision}", "no estimate", "no est."])
            plot.note.setToolTip(unmodelled[0].upper() + unmodelled[1:])
            return
        if fraction is None:
            plot.note.set_texts([])
        else:
            pct = f"{fraction * 100:.0f} %"
            plot.note.set_texts([f"peak {pct} of standard's", f"{pct} of standard's", f"{pct} of std.", pct])
        plot.note.setToolTip(f"{plot.note.full_text() or 'peak'}: the largest measured peak of this run over the "
                             "static estimate of the same step in standard mode (every activation kept)")

    def _place_memory_labels(self) -> None:
        curves = [item for curve in self.memory.curves.values() for item in (curve.raw, curve.smooth)
                  if item is not None]
        place_ref_labels(self.memory.plot.getPlotItem().getViewBox(), self._memory_refs, curves)

    def warn_level(self) -> float:
        return WARN_LEVEL

    def _draw_band(self, plot: MetricPlot) -> None:
        checked = any(name.startswith((GRAD_PREFIX, INV_PREFIX)) and len(series)
                      for run in self.runs for name, series in run.series.items())
        if not checked:  # no check to warn about: an empty plot, not one filled by the band
            self._band.hide()
            self._band_level = None
            info = self.runs[0].info if self.runs else {}
            if not self.runs:
                texts: list[str] = []
            elif info.get("regions") == []:
                texts = ["no reversible region to check", "no region to check"]
            elif (info.get("config") or {}).get("gradcheck_every") == 0:
                texts = ["gradient checks are off in this run (gradcheck_every 0)",
                         "checks off (gradcheck_every 0)", "checks off"]
            elif self.runs[0].ended:  # "yet" promises a check that will never come
                every = (info.get("config") or {}).get("gradcheck_every")
                texts = [f"no gradient check in this run (every {every} steps; it ended at step {self.runs[0].step})"
                         if every else "no gradient check in this run", "no check in this run", "no check"]
            else:
                texts = ["no gradient check yet", "no check yet"]
            plot.note.set_texts(texts)
            return
        plot.note.set_texts([])
        level = self.warn_level()
        lo, hi = (math.log10(level), 3.0) if plot.log_y else (level, 1e3)
        self._band.setRegion((lo, hi))
        self._band.show()
        self._band_level = level

    def _update_warning(self) -> None:
        texts = []
        level = self.warn_level()
        for run in self.runs[:1]:  # the run in front; overlays would repeat it per run
            for event in run.events:
                if event.get("event") in ("nan", "oom", "diverged", "not_learning"):
                    texts.append(f"Step {event.get('step')}: {event.get('message') or event.get('event')}")
            for name, series in run.series.items():
                if not name.startswith((GRAD_PREFIX, INV_PREFIX)) or not len(series):
                    continue
                value = series.last() or 0.0
                if value > level or math.isnan(value):
                    region = name.split("/", 1)[1]
                    layer = run.inverse_off.get(region) if name.startswith(INV_PREFIX) else None
                    if layer is not None:  # (which layer: a plugin's wrong inverse is no precision loss)
                        words = in_app_words(inverse_words(layer))
                        texts.append(f"Region {region} at step {int(series.last('step') or 0)}: "
                                     f"{words[0].upper()}{words[1:]}.")
                        continue
                    what = ("its reversible gradients disagree with standard autograd" if name.startswith(GRAD_PREFIX)
                            else "rebuilding its inputs from its outputs is off")
                    by = f"by {value:.2g}" if not math.isnan(value) else "by NaN or Inf (the check's point is missing)"
                    texts.append(f"Region {region}: {what} {by} at step {int(series.last('step') or 0)} "
                                 f"(the warning band starts at {level:g}). Its inverse is losing precision: try "
                                 "checkpoint mode for it, a higher precision, or a smaller learning rate.")
        self.warning.setText("\n".join(texts[-4:]))
        self.warning.setVisible(bool(texts))

    def _export(self, plot: MetricPlot, kind: str) -> None:
        name = plot.title_text.lower().replace(" ", "_")
        path, _ = QFileDialog.getSaveFileName(self, f"Export {plot.title_text}", f"{name}.{kind}",
                                              "PNG image (*.png)" if kind == "png" else "CSV table (*.csv)")
        if not path:
            return
        if kind == "png":
            plot.export_png(path)
        else:
            plot.export_csv(path)


def run_colour_index(name: str) -> int:
    """The palette index a run named ``name`` prefers: CRC-32 of its name, the same in every session
    and on every machine (Python's ``hash`` of a string changes from one process to the next)."""
    return zlib.crc32(name.encode("utf-8")) % len(PALETTE)


def slider_weight(position: int) -> float:
    """The smoothing weight at a slider position: hundredths up to 0.99, thousandths above."""
    if position <= SLIDER_FINE:
        return position / 100.0
    return round(0.99 + (min(position, SLIDER_TOP) - SLIDER_FINE) / 1000.0, 3)


def slider_position(weight: float) -> int:
    """The slider position nearest ``weight`` (0 to 0.999)."""
    if weight <= 0.99:
        return max(0, round(weight * 100))
    return min(SLIDER_TOP, SLIDER_FINE + round((weight - 0.99) * 1000))


def weight_text(weight: float) -> str:
    """The weight beside the slider: two decimals, three above 0.99 ("0.995")."""
    return f"{weight:.3f}" if weight > 0.99 else f"{weight:.2f}"
