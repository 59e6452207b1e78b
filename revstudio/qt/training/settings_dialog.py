"""Run > Run Settings: every key of the project's ``training`` section, checked as it is typed.

The dialog edits a copy; OK pushes one ``SetTraining`` command (one undo
step). Every change is checked by ``TrainConfig.from_section``, and its
message (which names the key) is shown under the form with OK disabled, so a
setting the CLI would refuse never reaches a run. The device list and the
data preview come from child processes: the editor never imports torch.
"""
from __future__ import annotations

import html
import json
import logging
import math
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer
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
from revstudio.diagnostics.budget import amount_text, budget_summary, parse_bytes
from revstudio.diagnostics.estimate import precision_note
from revstudio.qt import theme
from revstudio.qt.document import Document
from revstudio.qt.fit_scroll import FitScrollArea
from revstudio.qt.training import section as sec
from revstudio.qt.training.child_query import ChildQuery
from revstudio.training.config import INT_MAX

CHOICES = {
    "task": ("auto", "classification", "regression", "flow"),
    "optimizer": ("adam", "adamw", "sgd"),
    "schedule": ("constant", "cosine", "onecycle"),
    "precision": ("fp32", "bf16", "fp16"),
    "mode": ("reversible", "standard", "checkpoint"),
}
DATA_KINDS = (("synthetic", "synthetic (a learnable task for this graph)"), ("file", ".npz / .pt file"),
              ("mnist", "MNIST folder (IDX files)"), ("cifar10", "CIFAR-10 folder (binary batches)"))
NUMBERS = ("lr", "momentum", "weight_decay", "val_fraction")           # free text, parsed as floats
OPTIONAL_NUMBERS = ("grad_clip",)                                      # empty = null
INTS = ("warmup_steps", "batch_size", "seed", "log_every", "val_every", "gradcheck_every", "memory_every",
        "checkpoint_every")
log = logging.getLogger("revstudio")
DEVICE_TIP = ("auto: the first CUDA device when torch sees one, else the CPU; or type any device torch names "
              "(cuda:1, mps, xpu), as revstudio train --device takes it")
_devices_seen: list[dict[str, str]] = []  # what torch saw, once per editor session (a child costs seconds)


class NotANumber(ValueError):
    pass


class RunSettingsDialog(QDialog):
    """The form over a copy of the section; ``accept`` pushes it as one undoable edit."""

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Run settings")
        self.setObjectName("runSettingsDialog")
        self.document = document
        self.values = sec.resolved(document.graph.training)
        self.fields: dict[str, Any] = {}
        self._answer: dict[str, Any] | None = None  # the data preview's last answer (peek_data)
        self._queries: list[ChildQuery] = []

        # data
        self.data_kind = QComboBox()
        for key, text in DATA_KINDS:
            self.data_kind.addItem(text, key)
        self.data_path = QLineEdit()
        self.data_path.setPlaceholderText("file or folder (relative paths: to the project file)")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self.browse)
        self.preview = QLabel("")
        self.preview.setObjectName("dataPreview")
        self.preview.setWordWrap(True)
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
        scale = QCheckBox("scale uint8 inputs to [0, 1]")
        scale.setToolTip("uint8 arrays of a .npz / .pt become k / 255, as mnist: and cifar10: pixels (and "
                         "torchvision's ToTensor); off: kept raw 0..255. Labels and other number types never change.")
        scale.toggled.connect(self.changed)
        scale.toggled.connect(self._show_preview)
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
        self.length_kind = QComboBox()
        self.length_kind.addItem("steps", "steps")
        self.length_kind.addItem("epochs", "epochs")
        self.length = QSpinBox()
        self.length.setRange(1, INT_MAX)
        length_row = QHBoxLayout()
        length_row.addWidget(self.length)
        length_row.addWidget(self.length_kind)
        opt.addRow("length", length_row)

        run_box = QGroupBox("Run")
        run = QFormLayout(run_box)
        self.device = QComboBox()
        self.device.setEditable(True)
        self.device.setToolTip(DEVICE_TIP)
        run.addRow("device", self.device)
        run.addRow("precision", self._combo("precision"))
        run.addRow("mode", self._combo("mode"))
        run.addRow("seed", self._int("seed"))
        budget = self._text("memory_budget", "e.g. 64MiB, or empty: none")
        budget.setMinimumWidth(budget.fontMetrics().horizontalAdvance(budget.placeholderText()) + 24)
        budget.setToolTip("Reversible mode keeps the activations of as many regions (first steps first) as fit "
                          "in this much memory and runs the rest reversibly: memory to spare buys speed back. "
                          "Bytes, or an amount such as 64MiB or 1.5GB; 0 keeps nothing; empty: no budget, "
                          "the mode's own memory. The canvas's region badges show what it keeps.")
        run.addRow("memory budget", budget)
        self.budget_hint = QLabel("")  # under the boxes, the dialog's width: it names regions
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

        self.error = QLabel("")
        self.error.setObjectName("settingsError")
        self.error.setWordWrap(True)
        self.error.setProperty("tone", "error")  # the theme colours it, readable in both
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
                                        | QDialogButtonBox.StandardButton.RestoreDefaults)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults).clicked.connect(self.restore_defaults)
        form = QWidget()
        grid = QGridLayout(form)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(data_box, 0, 0, 1, 2)
        grid.addWidget(opt_box, 1, 0)
        grid.addWidget(run_box, 1, 1)
        grid.addWidget(self.budget_hint, 2, 0, 1, 2)
        grid.setRowStretch(3, 1)
        # the form scrolls on a screen too small for it; the error and the buttons stay in view
        self.form = FitScrollArea(form)
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
        self.detect_devices()
        self.request_preview()
        self.changed()

    # ---- building ---------------------------------------------------------------
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
                w.setText("" if value is None else _number_text(value))
        data = str(values.get("data") or "synthetic")
        kind, path = ("synthetic", "") if data == "synthetic" else next(
            ((k, data[len(k) + 1:]) for k in ("mnist", "cifar10") if data.startswith(k + ":")), ("file", data))
        self.data_kind.setCurrentIndex(self.data_kind.findData(kind))
        self.data_path.setText(path)
        self.val_data.setText(str(values.get("val_data") or ""))
        epochs = values.get("epochs")
        self.length_kind.setCurrentIndex(1 if epochs is not None else 0)
        self.length.setValue(int(epochs if epochs is not None else values.get("steps") or 1))
        self._fill_devices(str(values.get("device") or "auto"))
        for w in widgets:
            w.blockSignals(False)

    def _fill_devices(self, current: str) -> None:
        self.device.blockSignals(True)
        self.device.clear()
        self.device.addItem("auto", "auto")
        seen = _devices_seen or [{"id": "cpu", "name": "CPU"}]
        for d in seen:
            self.device.addItem(f"{d['id']} — {d['name']}", d["id"])
        i = self.device.findData(current)
        if i < 0:
            self.device.addItem(current, current)
            i = self.device.count() - 1
        self.device.setCurrentIndex(i)
        self.device.blockSignals(False)

    def _path_for_kind(self, *_args: object) -> None:
        """Synthetic data reads no path: the field is disabled, its text kept for switching back."""
        synthetic = self.data_kind.currentData() == "synthetic"
        self.data_path.setEnabled(not synthetic)
        self.data_path.setToolTip("Synthetic data reads no file; choose another source to use this path"
                                  if synthetic else "")

    # ---- children -------------------------------------------------------------------
    def detect_devices(self) -> None:
        if _devices_seen:
            return
        self.device.setToolTip("Asking torch which devices it sees …")
        query = ChildQuery("revstudio.qt.training.probe", ["devices"], parent=self)
        query.answered.connect(self._devices_answered)
        self._queries.append(query.start())

    def _devices_answered(self, answer: dict[str, Any]) -> None:
        if isinstance(answer.get("devices"), list):
            _devices_seen[:] = [d for d in answer["devices"] if isinstance(d, dict) and "id" in d]
            current = self._device_value()
            self._fill_devices(current)
            self.device.setToolTip(DEVICE_TIP + ". Torch sees: " + ", ".join(d["id"] for d in _devices_seen))
        else:
            self.device.setToolTip(f"Could not ask torch for its devices: {answer.get('error')}")

    def request_preview(self) -> None:
        self._answer = None  # (the box's toggle redraws the preview of this spec's answer only)
        spec = self._data_spec()
        if spec == "synthetic":
            self.preview.setText("Synthetic data: a learnable task shaped like this graph's inputs and outputs.")
            return
        if not self.data_path.text().strip():
            self.preview.setText("Choose a file or folder.")
            return
        self.preview.setText(f"Reading {spec} …")
        base = str(Path(self.document.path).resolve().parent) if self.document.path else ""
        query = ChildQuery("revstudio.qt.training.probe", ["peek", spec, base, json.dumps(self._input_shapes())],
                           parent=self)
        query.answered.connect(lambda answer, s=spec: self._preview_answered(s, answer))
        self._queries.append(query.start())

    def _input_shapes(self) -> dict[str, list[int]]:
        """The Input nodes' shapes as the check infers them ({} while any is unknown): the preview
        says whether the data fit them before Train is pressed."""
        report = self.document.current_report()
        found = {nid: report.shape(f"{nid}.out") for nid in report.nodes if report.nodes[nid].type == "Input"}
        if any(shape is None for shape in found.values()):
            return {}
        return {nid: [int(s) for s in shape] for nid, shape in found.items() if shape is not None}

    def _preview_answered(self, spec: str, answer: dict[str, Any]) -> None:
        if spec != self._data_spec():
            return  # an older question
        if answer.get("error"):
            self.preview.setText(f"<span style='color:{theme.colors().error}'>{answer['error']}</span>")
            return
        self._answer = answer
        self._show_preview()

    def _show_preview(self, *_args: object) -> None:
        answer = self._answer
        if answer is None or answer.get("error"):
            return
        text = sec.preview_text(answer, self.fields["scale_uint8"].isChecked())
        if answer.get("problem"):
            problem = html.escape(answer["problem"], quote=False)
            text = f"{html.escape(text, quote=False)}<br><span style='color:{theme.colors().error}'>{problem}</span>"
        self.preview.setText(text)

    def browse(self) -> None:
        start = str(Path(self.document.path).parent) if self.document.path else str(Path.home())
        if self.data_kind.currentData() in ("mnist", "cifar10"):
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
        kind = self.data_kind.currentData()
        path = self.data_path.text().strip()
        if kind == "synthetic":
            return "synthetic"
        return f"{kind}:{path}" if kind in ("mnist", "cifar10") else path

    def _device_value(self) -> str:
        text = self.device.currentText().strip()
        data = self.device.currentData()
        return str(data) if data is not None and self.device.itemText(self.device.currentIndex()) == text \
            else text.split(" ", 1)[0]

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
                out[key] = _parse_amount(key, w.text())
            else:
                out[key] = _parse_number(key, w.text(), optional=key in OPTIONAL_NUMBERS)
        out["data"] = self._data_spec()
        out["val_data"] = self.val_data.text().strip() or None
        length = int(self.length.value())
        out["steps"], out["epochs"] = (length, None) if self.length_kind.currentData() == "steps" else (None, length)
        out["device"] = self._device_value()
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

    def update_budget_hint(self) -> None:
        self._hint_timer.stop()
        hint = self._budget_hint()
        self.budget_hint.setText(hint)
        self.budget_hint.setVisible(bool(hint))

    def _budget_hint(self) -> str:
        """What the typed memory budget keeps and its estimated peak (from the editor's analysis)."""
        try:
            budget = _parse_amount("memory_budget", self.fields["memory_budget"].text())
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
        for query in self._queries:
            query.kill()
        super().done(result)


def _number_text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _parse_number(key: str, text: str, optional: bool) -> Any:
    text = text.strip().replace("_", "")
    if not text:
        if optional:
            return None
        raise NotANumber(f"training.{key}: enter a number")
    try:
        value = float(text)
    except ValueError:
        raise NotANumber(f"training.{key}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise NotANumber(f"training.{key}: {text!r} is not a finite number")
    return value


def _parse_amount(key: str, text: str) -> int | None:
    """A memory amount as typed ("64MiB", "1.5 GB", "200000"); empty is no budget."""
    if not text.strip():
        return None
    try:
        return parse_bytes(text)  # (digit groups, 1_000, as the CLI and the project file read them)
    except ValueError as exc:
        raise NotANumber(f"training.{key}: {exc}") from None



