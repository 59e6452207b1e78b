"""The Runs tab's Sample…: ``revstudio sample RUN -o FILE.npz -n N --temperature T --seed S --json`` in a
child process, then the samples shown (``sample_view``).

:class:`SampleDialog` asks for the count, temperature, seed and the ``.npz`` to write (remembered in the
app's settings); the command (the CLI's own code path: the flow's inverse on seeded Gaussian noise, the file
written whole or not at all) runs in a :class:`ChildQuery`, so torch never loads in the editor and the
window keeps painting. What it wrote is named in the status bar and the Log; a refusal (no flow, a folder
that does not exist) goes to the Log and a message box in the command's words.
"""
from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from revstudio.core.project_format import SNAPSHOT
from revstudio.qt.runs.run_command import RunCommand
from revstudio.qt.settings import Settings
from revstudio.training.run_status import started_field

log = logging.getLogger("revstudio.qt")
NPZ_FILES = "NumPy archives (*.npz)"
SAMPLE_TIP = ("Draw samples from this trained flow: its inverse run on seeded Gaussian noise, written to a .npz "
              "and shown (revstudio sample RUN)")
FLOW_ONLY = "sampling runs a flow's inverse on Gaussian noise"


def trained_task(run_dir: Path, lines: int = 8) -> str | None:
    """The task the run trained (its ``started`` row's ``task``: flow, classification, regression); None
    where no row says (not started, unreadable)."""
    return started_field(run_dir, "task", lines)


def sample_refusal(run_dir: Path) -> str | None:
    """Why the run cannot be sampled (the Sample… button's tooltip while it is off), or None where the
    command may try: a run that trained another task than a flow on a graph with no log-determinant is
    refused in the command's own words; one whose graph has a flow layer is left to the command to judge."""
    task = trained_task(run_dir)
    if task is None or task == "flow":
        return None
    snapshot = run_dir / SNAPSHOT
    try:
        stamp = snapshot.stat().st_mtime_ns
    except OSError:
        return None  # (the command says what is missing)
    return _no_logdet(str(snapshot), stamp)


@lru_cache(maxsize=64)
def _no_logdet(snapshot: str, _stamp: int) -> str | None:
    """The command's refusal of a graph with no log-determinant (``train --task flow``'s words), or None;
    read once a version of the snapshot (``_stamp``: its mtime), not on each selection."""
    from revstudio.core.project import ProjectError, load
    from revstudio.training.task import DataError, has_logdet, infer_task

    try:
        graph = load(snapshot)
    except (ProjectError, OSError, ValueError):
        return None
    if has_logdet(graph) is not None:
        return None  # (whether its Output fits a flow takes the shapes: the command checks them)
    try:
        infer_task(graph, None, "flow")  # (what refuses it, in the words sampling.draw gives it)
    except DataError as exc:
        return f"{snapshot}: cannot sample: {exc}; {FLOW_ONLY}"
    return None


class SampleDialog(QDialog):
    """Number of samples, temperature, seed and output file; the last values are remembered."""

    def __init__(self, run_dir: Path, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.run_dir, self.settings = Path(run_dir), settings
        self.setWindowTitle(f"Sample {self.run_dir.name}")
        self.setObjectName("sampleDialog")
        self.setAccessibleName(f"Sample {self.run_dir.name}")
        count, temperature, seed, folder = settings.run_sample()
        self.count = QSpinBox()
        self.count.setRange(1, 100_000)
        self.count.setValue(count)
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.01, 10.0)
        self.temperature.setDecimals(2)
        self.temperature.setSingleStep(0.05)
        self.temperature.setValue(temperature)
        self.seed = QSpinBox()
        self.seed.setRange(0, 2 ** 31 - 1)
        self.seed.setValue(seed)
        # (beside the run's folder, as Export with Weights… starts, or where the last samples went)
        self.output = QLineEdit(str(Path(folder or self.run_dir.parent.parent) / f"{self.run_dir.name}-samples.npz"))
        self.browse = QPushButton("&Browse…")
        self.browse.clicked.connect(self._browse)
        for widget, name, tip in (
                (self.count, "Number of samples", "How many samples to draw (revstudio sample -n)"),
                (self.temperature, "Temperature", "Scale of the Gaussian noise: 1 is the prior itself, below 1 "
                                                  "gives more typical samples (0.7, as Glow)"),
                (self.seed, "Seed", "The noise's seed: the same seed draws the same samples"),
                (self.output, "Output file", "The .npz the samples are written to, whole or not at all"),
                (self.browse, "Choose the output file", "Pick where the .npz goes")):
            widget.setAccessibleName(name)
            widget.setToolTip(tip)
        where = QHBoxLayout()
        where.addWidget(self.output, 1)
        where.addWidget(self.browse)
        form = QFormLayout()
        form.addRow("&Samples:", self.count)
        form.addRow("&Temperature:", self.temperature)
        form.addRow("S&eed:", self.seed)
        caption = QLabel("&Output file:")
        caption.setBuddy(self.output)  # (Alt+O: the field, not the row's layout)
        form.addRow(caption, where)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Sample")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.buttons)
        self.count.setFocus()
        self.resize(560, self.sizeHint().height())

    def _browse(self) -> None:
        path, _chosen = QFileDialog.getSaveFileName(self, f"Samples of {self.run_dir.name}", self.output.text(),
                                                    NPZ_FILES)
        if path:
            self.output.setText(path if path.endswith(".npz") else path + ".npz")

    def path(self) -> str:
        text = self.output.text().strip()
        return text if not text or text.endswith(".npz") else text + ".npz"

    def accept(self) -> None:
        if not self.path():
            self.output.setFocus()
            self.output.setPlaceholderText("Name the .npz the samples go to")
            return
        self.settings.set_run_sample(self.count.value(), self.temperature.value(), self.seed.value(),
                                     str(Path(self.path()).absolute().parent))
        super().accept()

    def arguments(self) -> list[str]:
        return ["-o", str(Path(self.path()).absolute()), "-n", str(self.count.value()),
                "--temperature", f"{self.temperature.value():g}", "--seed", str(self.seed.value())]


def answer_words(run_dir: Path, answer: dict[str, Any], whole_paths: bool = False) -> tuple[bool, str]:
    """(whether it worked, what to say): the file written and its arrays' shapes, or the command's refusal."""
    if answer.get("ok", True) and answer.get("exit_code", 0) == 0 and answer.get("written"):
        written = str(answer["written"])
        arrays = ", ".join(f"{k} {'x'.join(map(str, v))}" for k, v in (answer.get("arrays") or {}).items())
        notes = "".join(f"; note: {n}" for n in answer.get("notes") or [])
        return True, (f"Sampled {answer.get('samples')} from {run_dir if whole_paths else run_dir.name} "
                      f"(temperature {answer.get('temperature'):g}, seed {answer.get('seed')}): "
                      f"{written if whole_paths else Path(written).name}: {arrays}{notes}")
    return False, f"Cannot sample {run_dir.name}: {answer.get('error') or 'the sample command failed'}"


class RunSample(RunCommand):
    """One ``revstudio sample`` of a run: its child, and what it said (``ok``, ``words``) once it answered;
    ``view``: the window that shows the samples, once written."""

    def __init__(self, window: Any, run_dir: Path, arguments: list[str]) -> None:
        self.view: Any = None
        super().__init__(window, run_dir, "sample", arguments)

    def start(self) -> RunSample:
        self._say(f"Sampling {self.run_dir.name}…")
        self.query.start()
        return self

    def _answered(self, answer: dict[str, Any]) -> None:
        self.ok, self.words = answer_words(self.run_dir, answer)
        if self.ok:
            from revstudio.qt.runs.sample_view import SamplesView

            self.view = SamplesView(self.run_dir, Path(str(answer["written"])), self.window)
            self._say(self.words, logged=f"{answer_words(self.run_dir, answer, whole_paths=True)[1]} "
                                         f"({self.view.shown})")
            self.view.show()
        else:
            self._say(f"Sampling {self.run_dir.name} failed", error=True, logged=self.words)
            self.window.dialogs.error(self.window, "Cannot sample", self.words)
        self.query.deleteLater()


def sample_run_with_dialog(window: Any, run_dir: Path) -> RunSample | None:
    """Ask how many samples and where they go, then sample the run (None where nothing started)."""
    refusal = sample_refusal(run_dir)
    if refusal is not None:  # before asking: the answer would be thrown away
        log.error("%s", refusal)
        window.dialogs.error(window, "Cannot sample", refusal)
        return None
    dialog = SampleDialog(run_dir, Settings(), window)
    if dialog.exec() != QDialog.DialogCode.Accepted:
        return None
    return RunSample(window, run_dir, dialog.arguments()).start()
