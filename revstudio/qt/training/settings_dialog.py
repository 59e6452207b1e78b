"""Run > Run Settings: every key of the project's ``training`` section, checked as it is typed.

The dialog edits a copy; OK pushes one ``SetTraining`` command (one undo
step). Every change is checked by ``TrainConfig.from_section``, and its
message (which names the key) is shown under the form with OK disabled, so a
setting the CLI would refuse never reaches a run. The device list and the
data preview come from child processes (``settings_children``): the editor never
imports torch. ``settings_values`` turns the fields' text into the section's values.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from revstudio.core.commands import SetTraining
from revstudio.diagnostics.budget import amount_text, budget_summary
from revstudio.diagnostics.estimate import precision_note
from revstudio.qt.document import Document
from revstudio.qt.fit_scroll import DIALOG_ROOM, FRAME, FitScrollArea, screen_of
from revstudio.qt.training import section as sec
from revstudio.qt.training.settings_children import DataPreview, DeviceBox
from revstudio.qt.training.settings_values import (
    CHOICES,
    DATA_KINDS,
    FOLDER_KINDS,
    OPTIONAL_NUMBERS,
    NotANumber,
    data_source,
    data_spec,
    number_text,
    parse_amount,
    parse_number,
)
from revstudio.qt.wrap_label import WrapLabel
from revstudio.training.config import INT_MAX, THREADS_MAX

log = logging.getLogger("revstudio")


class RunSettingsDialog(QDialog):
    """The form over a copy of the section; ``accept`` pushes it as one undoable edit."""

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Run settings")
        self.setObjectName("runSettingsDialog")
        self.document = document
        self.values = sec.resolved(document.graph.training)
        self.fields: dict[str, Any] = {}

        # data
        self.data_kind = QComboBox()
        for key, text in DATA_KINDS:
            self.data_kind.addItem(text, key)
        self.data_path = QLineEdit()
        self.data_path.setPlaceholderText("file or folder (relative paths: to the project file)")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self.browse)
        self.preview = DataPreview(document, self._data_spec, lambda: self.fields["scale_uint8"].isChecked())
        self.val_data = QLineEdit()
        self.val_data.setPlaceholderText("empty: hold out the validation fraction of the data")
        data_row = QHBoxLayout()
        data_row.addWidget(self.data_kind)
        data_row.addWidget(self.data_path, 1)
        data_row.addWidget(browse)
        data_box = QGroupBox("Data")
        data_form = QFormLayout(data_box)
        data_form.addRow("source", data_row)
        data_form.addRow("", self.preview)
        data_form.addRow("validation data", self.val_data)
        data_form.addRow("validation fraction", self._text("val_fraction"))
        data_form.addRow("task / loss", self._combo("task"))
        self.task_hint = WrapLabel("")  # what the run will optimise and why (auto: the labels' header decides)
        self.task_hint.setObjectName("taskHint")
        self.task_hint.setWordWrap(True)
        data_form.addRow("", self.task_hint)
        self.preview.listeners.append(self.update_task_hint)
        scale = QCheckBox("scale uint8 inputs to [0, 1]")
        scale.setToolTip("uint8 arrays of a .npz / .pt become k / 255, as mnist: and cifar10: pixels (and "
                         "torchvision's ToTensor); off: kept raw 0..255. Labels and other number types never change.")
        scale.toggled.connect(self.changed)
        scale.toggled.connect(self.preview.show_answer)
        self.fields["scale_uint8"] = scale
        data_form.addRow("8-bit inputs", scale)

        opt_box = QGroupBox("Optimisation")
        opt = QFormLayout(opt_box)
        opt.addRow("optimizer", self._combo("optimizer"))
        opt.addRow("learning rate", self._text("lr"))
        opt.addRow("momentum", self._text("momentum"))
        opt.addRow("weight decay", self._text("weight_decay"))
        opt.addRow("schedule", self._combo("schedule"))
        opt.addRow("warm-up steps", self._int("warmup_steps"))
        opt.addRow("gradient clipping", self._text("grad_clip", "empty: no clipping (max global norm)"))
        opt.addRow("batch size", self._int("batch_size", 1))
        accumulate = self._int("accumulate", 1)
        accumulate.setToolTip("Gradient accumulation: each optimizer step sums the gradients of this many "
                              "micro-batches of the batch size, so a step sees batch size x this many samples "
                              "at the memory of one micro-batch. 1: no accumulation.")
        opt.addRow("micro-batches per step", accumulate)
        self.length_kind = QComboBox()
        self.length_kind.addItem("steps", "steps")
        self.length_kind.addItem("epochs", "epochs")
        self.length = QSpinBox()
        self.length.setRange(1, INT_MAX)
        length_row = QHBoxLayout()
        length_row.addWidget(self.length)
        length_row.addWidget(self.length_kind)
        opt.addRow("length", length_row)
        # Early stopping beside the length it cuts short, on one row: the Run box was the taller of the
        # two and Run Settings scrolled on a 1366x768 screen.
        patience = self._int("patience")  # (0 shows as off: the section's null)
        patience.setSpecialValueText("off")
        patience.setAccessibleName("early stopping patience")
        patience.setToolTip("Early stopping: the run ends once its validation loss has not improved for this "
                            "many validations in a row; checkpoints/best.pt holds the best weights. Needs "
                            "validation (a validation set and 'validate every' above 0).")
        min_delta = self._text("min_delta", "0")
        min_delta.setAccessibleName("early stopping min. delta")
        min_delta.setToolTip("The fall in validation loss below its best that counts as an improvement for "
                             "early stopping's patience (0: any fall in val_loss is an improvement).")
        delta_label = QLabel("min. delta")
        delta_label.setBuddy(min_delta)
        stop_row = QHBoxLayout()
        stop_row.addWidget(patience, 2)
        stop_row.addWidget(delta_label)
        stop_row.addWidget(min_delta, 1)
        opt.addRow("early stopping", stop_row)

        run_box = QGroupBox("Run")
        run = QFormLayout(run_box)
        self.device = DeviceBox()
        run.addRow("device", self.device)
        run.addRow("precision", self._combo("precision"))
        run.addRow("mode", self._combo("mode"))
        run.addRow("seed", self._int("seed"))
        threads = self._int("threads")  # (0 shows as torch's default: the section's null)
        threads.setRange(0, THREADS_MAX)
        threads.setSpecialValueText("torch's default")
        threads.setToolTip("CPU threads each training process uses (torch.set_num_threads; under several "
                           "processes, each its own). The count changes a run's last bits (how sums are split "
                           "over threads) and its speed: a run repeats bit for bit only with the same count. "
                           "torch's default is recorded in the run's environment.json.")
        run.addRow("CPU threads", threads)
        budget = self._text("memory_budget", "e.g. 64MiB, or empty: none")
        budget.setMinimumWidth(budget.fontMetrics().horizontalAdvance(budget.placeholderText()) + 24)
        budget.setToolTip("Reversible mode keeps the activations of as many regions (first steps first) as fit "
                          "in this much memory and runs the rest reversibly: memory to spare buys speed back. "
                          "Bytes, or an amount such as 64MiB or 1.5GB; 0 keeps nothing; empty: no budget, "
                          "the mode's own memory. The canvas's region badges show what it keeps.")
        run.addRow("memory budget", budget)
        self.budget_hint = WrapLabel("")  # under the boxes, the dialog's width: it names regions
        self.budget_hint.setObjectName("budgetHint")
        self.budget_hint.setWordWrap(True)
        self.budget_hint.hide()
        # the hint walks the step (a third of a second on a 2,500-node graph): once typing pauses
        self._hint_timer = QTimer(self)
        self._hint_timer.setSingleShot(True)
        self._hint_timer.setInterval(200)
        self._hint_timer.timeout.connect(self.update_budget_hint)
        for key, label in (("log_every", "log every (steps)"), ("val_every", "validate every (0: at the end)"),
                           ("gradcheck_every", "gradient check every (0: never)"),
                           ("memory_every", "measure memory every (0: never)"),
                           ("checkpoint_every", "checkpoint every (0: at the end)")):
            run.addRow(label, self._int(key, 1 if key == "log_every" else 0))

        self.error = WrapLabel("")
        self.error.setObjectName("settingsError")
        self.error.setWordWrap(True)
        self.error.setProperty("tone", "error")  # the theme colours it, readable in both
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
                                        | QDialogButtonBox.StandardButton.RestoreDefaults)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults).clicked.connect(self.restore_defaults)
        form = QWidget()
        self._grid = QGridLayout(form)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._boxes = (data_box, opt_box, run_box)
        self._columns = 0
        self.arrange(2)
        # the form scrolls on a screen too small for it; the error and the buttons stay in view
        self.form = FitScrollArea(form)
        self.form.setAccessibleName("Run settings form")
        layout = QVBoxLayout(self)
        layout.addWidget(self.form, 1)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)

        self._fill(self.values)
        for box in (self.data_kind, self.length_kind, self.device):
            box.currentIndexChanged.connect(self.changed)
        for edit in (self.data_path, self.val_data, self.device.lineEdit()):
            if edit is not None:
                edit.textChanged.connect(self.changed)
        self.data_path.editingFinished.connect(self.request_preview)
        self.data_kind.currentIndexChanged.connect(self.request_preview)
        self.data_kind.currentIndexChanged.connect(self._path_for_kind)
        self._path_for_kind()
        self.length.valueChanged.connect(self.changed)
        self.device.detect()
        self.request_preview()
        self.changed()

    # ---- building ---------------------------------------------------------------
    def arrange(self, columns: int) -> None:
        """Optimisation beside Run (2 columns), or below it (1): at 175 % text and more their two
        columns are wider than a 1366 or 1280 px screen, and the form scrolled sideways."""
        if columns == self._columns:
            return
        self._columns = columns
        grid = self._grid
        data_box, opt_box, run_box = self._boxes
        for widget in (*self._boxes, self.budget_hint):
            grid.removeWidget(widget)
        grid.setRowStretch(3, 0)
        grid.addWidget(data_box, 0, 0, 1, columns)
        grid.addWidget(opt_box, 1, 0)
        grid.addWidget(run_box, 1 if columns == 2 else 2, columns - 1)
        grid.addWidget(self.budget_hint, 3, 0, 1, columns)
        grid.setRowStretch(4, 1)
        grid.setColumnStretch(1, 1 if columns == 2 else 0)

    def fit_columns(self) -> None:
        """Two columns where the screen's width holds them beside the data box, else one."""
        screen = screen_of(self)
        if screen is None:
            return
        room = screen.availableGeometry().width() - DIALOG_ROOM.width() - FRAME.width()
        _data_box, opt_box, run_box = self._boxes
        beside = opt_box.sizeHint().width() + self._grid.horizontalSpacing() + run_box.sizeHint().width()
        self.arrange(2 if beside <= room else 1)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt API
        self.fit_columns()  # (before the scroll area sizes the window to its content)
        super().showEvent(event)

    def _combo(self, key: str) -> QComboBox:
        box = QComboBox()
        for choice in CHOICES[key]:
            box.addItem(choice, choice)
        box.currentIndexChanged.connect(self.changed)
        self.fields[key] = box
        return box

    def _text(self, key: str, placeholder: str = "") -> QLineEdit:
        edit = QLineEdit()
        edit.setPlaceholderText(placeholder)
        edit.textChanged.connect(self.changed)
        self.fields[key] = edit
        return edit

    def _int(self, key: str, minimum: int = 0) -> QSpinBox:
        spin = QSpinBox()
        spin.setRange(minimum, INT_MAX)  # every value the config takes: none is cut down
        spin.valueChanged.connect(self.changed)
        self.fields[key] = spin
        return spin

    def _fill(self, values: dict[str, Any]) -> None:
        widgets = [*self.fields.values(), self.data_kind, self.data_path, self.val_data, self.length,
                   self.length_kind, self.device]
        for w in widgets:
            w.blockSignals(True)
        for key, w in self.fields.items():
            value = values.get(key)
            if isinstance(w, QComboBox):
                i = w.findData(value)
                w.setCurrentIndex(max(i, 0))
            elif isinstance(w, QCheckBox):
                w.setChecked(value is not False)
            elif isinstance(w, QSpinBox):
                w.setValue(int(value) if isinstance(value, int) else w.minimum())
            elif key == "memory_budget":
                w.setText("" if value is None else amount_text(value) if isinstance(value, int) else str(value))
            else:
                w.setText("" if value is None else number_text(value))
        kind, path = data_source(values.get("data"))
        self.data_kind.setCurrentIndex(self.data_kind.findData(kind))
        self.data_path.setText(path)
        self.val_data.setText(str(values.get("val_data") or ""))
        epochs = values.get("epochs")
        self.length_kind.setCurrentIndex(1 if epochs is not None else 0)
        self.length.setValue(int(epochs if epochs is not None else values.get("steps") or 1))
        self.device.fill(str(values.get("device") or "auto"))
        for w in widgets:
            w.blockSignals(False)

    def _path_for_kind(self, *_args: object) -> None:
        """Synthetic data reads no path: the field is disabled, its text kept for switching back."""
        synthetic = self.data_kind.currentData() == "synthetic"
        self.data_path.setEnabled(not synthetic)
        self.data_path.setToolTip("Synthetic data reads no file; choose another source to use this path"
                                  if synthetic else "")

    # ---- children -------------------------------------------------------------------
    def request_preview(self) -> None:
        """Ask a child what the chosen data holds (the preview under the source)."""
        self.preview.request(bool(self.data_path.text().strip()))

    def browse(self) -> None:
        start = str(Path(self.document.path).parent) if self.document.path else str(Path.home())
        if self.data_kind.currentData() in FOLDER_KINDS:
            path = QFileDialog.getExistingDirectory(self, "Data folder", start)
        else:
            path, _ = QFileDialog.getOpenFileName(self, "Data file", start, "Arrays (*.npz *.pt);;All files (*)")
            if path:
                self.data_kind.setCurrentIndex(self.data_kind.findData("file"))
        if path:
            self.data_path.setText(self._relative(path))
            self.request_preview()

    def _relative(self, path: str) -> str:
        if not self.document.path:
            return path
        try:
            return str(Path(path).resolve().relative_to(Path(self.document.path).resolve().parent))
        except ValueError:
            return path

    # ---- reading the form ------------------------------------------------------------
    def _data_spec(self) -> str:
        return data_spec(str(self.data_kind.currentData()), self.data_path.text().strip())

    def section(self) -> dict[str, Any]:
        """The form as a training section (raises NotANumber naming the key for unparsable text)."""
        out = dict(self.values)
        for key, w in self.fields.items():
            if isinstance(w, QComboBox):
                out[key] = w.currentData()
            elif isinstance(w, QCheckBox):
                out[key] = w.isChecked()
            elif isinstance(w, QSpinBox):
                out[key] = int(w.value())
            elif key == "memory_budget":
                out[key] = parse_amount(key, w.text())
            else:
                out[key] = parse_number(key, w.text(), optional=key in OPTIONAL_NUMBERS)
        out["data"] = self._data_spec()
        out["val_data"] = self.val_data.text().strip() or None
        length = int(self.length.value())
        out["steps"], out["epochs"] = (length, None) if self.length_kind.currentData() == "steps" else (None, length)
        out["device"] = self.device.value()
        out["threads"] = out["threads"] or None  # (the spin box's 0: torch's default)
        out["patience"] = out["patience"] or None  # (0: off, the section's null)
        return out

    def problem(self) -> str | None:
        try:
            section = self.section()
        except NotANumber as exc:
            return str(exc)
        if section["data"] == "":
            return "training.data: choose a data file or folder, or pick synthetic data"
        return sec.validate(section) or sec.data_problem(section, self.document.path)

    def changed(self, *_args: object) -> None:
        problem = self.problem()
        self.error.setText(problem or "")
        self.error.setVisible(bool(problem))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(problem is None)
        self._hint_timer.start()
        self.update_task_hint()

    def update_task_hint(self) -> None:
        """The task box's words: what a run will optimise and why (``section.task_text``)."""
        report = self.document.current_report()
        try:
            text = sec.task_text(self.document.graph, report, str(self.fields["task"].currentData()),
                                 self.preview.answer, self._data_spec())
        except Exception:  # a hint must never break the dialog
            log.exception("task hint failed")
            text = ""
        self.task_hint.setText(text)
        self.task_hint.setVisible(bool(text))

    def update_budget_hint(self) -> None:
        self._hint_timer.stop()
        hint = self._budget_hint()
        self.budget_hint.setText(hint)
        self.budget_hint.setVisible(bool(hint))

    def _budget_hint(self) -> str:
        """What the typed memory budget keeps and its estimated peak (from the editor's analysis)."""
        try:
            budget = parse_amount("memory_budget", self.fields["memory_budget"].text())
        except NotANumber:
            return ""  # the error line says why
        if budget is None:
            return ""
        if self.fields["mode"].currentData() != "reversible":
            return "memory budget: used in reversible mode only"
        report = self.document.current_report()  # (its peaks walked: the budget's summary reads them)
        if report is None or getattr(report, "estimate", None) is None:
            return ""
        try:
            hint = "memory budget: " + budget_summary(self.document.graph, report, budget,
                                                      batch=int(self.fields["batch_size"].value()))
            note = precision_note(self.fields["precision"].currentData())
            if note:  # (what it keeps is priced the same; the peaks are fp32 steps')
                hint += f"; {note}"
            return hint
        except Exception:  # a hint must never break the dialog
            log.exception("memory budget hint failed")
            return ""

    def restore_defaults(self) -> None:
        self._fill(sec.defaults())
        self._path_for_kind()
        self.changed()
        self.request_preview()

    def accept(self) -> None:
        if self.problem() is not None:
            self.changed()
            return
        section = sec.normalized(self.section())
        if sec.stored(self.document.graph.training) != section:
            self.document.push(SetTraining(self.document.graph, section))
        super().accept()

    def done(self, result: int) -> None:
        self.device.stop()
        self.preview.stop()
        super().done(result)
