"""The Runs tab's Export with Weights…: ``revstudio export RUN -o OUT.py --json`` in a child process
(``-o OUT.onnx`` where the user picks an ONNX file: the network and its weights in one file).

The user picks where the code goes; the command (the CLI's own code path: the run's snapshot as code and
its last checkpoint's weights beside it as ``OUT.pt``, checked against the graph before anything is
written) runs in a :class:`ChildQuery`, so torch never loads in the editor and the window keeps painting.
The written files are named in the status bar and the Log; a refusal (no checkpoint, weights that do not
fit, a path that cannot be written) is shown in the command's words.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog, QWidget

from revstudio.qt.runs.run_command import RunCommand

PYTHON_FILES, ONNX_FILES = "Python files (*.py)", "ONNX files (*.onnx)"


def default_output(run_dir: Path) -> str:
    """Where the file dialog starts: ``model.py`` beside the run's folder (not inside it, where the run's
    own ``model.py`` lies), named after the project the run trained."""
    stem = run_dir.name.rsplit("-", 2)[0] if run_dir.name.count("-") >= 2 else run_dir.name
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in stem).strip("_") or "model"
    if name[0].isdigit():
        name = f"model_{name}"
    return str(run_dir.parent.parent / f"{name}.py")


def no_checkpoint(run_dir: Path) -> str | None:
    """Why the run has no weights to export yet, or None where it has a checkpoint."""
    if (run_dir / "checkpoints" / "last.pt").is_file():
        return None
    return (f"{run_dir.name} has saved no checkpoint yet, so it has no trained weights to export (a run writes "
            "one every checkpoint_every steps and when it ends). File > Export Python… exports the project alone.")


def answer_words(run_dir: Path, answer: dict[str, Any], name: str | None = None,
                 whole_paths: bool = False) -> tuple[bool, str]:
    """(whether it worked, what to say): the files written, or the command's refusal (``name``: what
    the words call the source, the run's folder name where not given). ``whole_paths``: the Log's
    words, the same report with the files' and the run's whole paths where the status bar names them."""
    name = name or run_dir.name

    def file(path: Any) -> str:
        return str(path) if whole_paths else Path(str(path)).name
    if answer.get("ok") and answer.get("exit_code", 0) == 0 and answer.get("format") == "onnx":
        diff = answer.get("max_abs_diff")
        checked = ("onnxruntime is not installed, so only onnx.checker checked it" if diff is None
                   else f"onnxruntime's outputs differ from the model's by at most {float(diff):.2g}")
        return True, (f"Exported {name} as ONNX: {file(answer.get('output'))} (inputs "
                      f"{', '.join(answer.get('inputs') or [])}; outputs {', '.join(answer.get('outputs') or [])}; "
                      f"opset {answer.get('opset')}; {checked})")
    if answer.get("ok") and answer.get("exit_code", 0) == 0:
        code, weights = answer.get("output"), answer.get("weights")
        files = f"{file(code)} and {file(weights)}" if weights else file(code)
        source = str(run_dir) if whole_paths else run_dir.name
        return True, f"Exported {source} with its weights: {files} ({answer.get('lines')} lines)"
    why = answer.get("error") or "the export failed"
    problems = [p for p in answer.get("problems") or [] if p != why]
    return False, f"Cannot export {name}: {why}" + "".join(f"\n  {p}" for p in problems)


class RunExport(RunCommand):
    """One export of a run: its child, and what it said (``ok``, ``words``) once it answered."""

    def __init__(self, window: Any, run_dir: Path, output: str, name: str | None = None,
                 done: Any = None) -> None:
        self.output = str(Path(output).absolute())
        self.name = name or Path(run_dir).absolute().name  # (File > Export ONNX… exports a snapshot: the project's name)
        self.done = done  # called once answered (File > Export ONNX… removes its snapshot)
        super().__init__(window, run_dir, "export", ["-o", self.output])

    def start(self) -> RunExport:
        weights = "" if self.name != self.run_dir.name else " with its weights"
        self._say(f"Exporting {self.name}{weights} to {Path(self.output).name}…")
        self.query.start()
        return self

    def _answered(self, answer: dict[str, Any]) -> None:
        if self.done is not None:
            self.done()
        self.ok, self.words = answer_words(self.run_dir, answer, self.name)
        if self.ok:  # the Log keeps the whole report, the status bar's words (which go) with whole paths
            self._say(self.words, logged=answer_words(self.run_dir, answer, self.name, whole_paths=True)[1])
            panel = getattr(getattr(self.window, "training", None), "runs_panel", None)
            if panel is not None:  # (the run's detail names its latest export, which the command recorded)
                panel.reload()
        else:
            self._say(f"Export of {self.name} failed", error=True, logged=self.words)
            self.window.dialogs.error(self.window, "Cannot export", self.words)
        self.query.deleteLater()


def export_run_with_dialog(window: Any, run_dir: Path, parent: QWidget | None = None) -> RunExport | None:
    """Ask where the code goes, then export the run with its weights (None where nothing started)."""
    refusal = no_checkpoint(run_dir)
    if refusal is not None:  # before asking for a file name: the answer would be thrown away
        window.dialogs.error(window, "Cannot export", refusal)
        return None
    path, chosen = QFileDialog.getSaveFileName(parent or window, f"Export {run_dir.name} with its weights",
                                               default_output(run_dir), f"{PYTHON_FILES};;{ONNX_FILES}")
    if not path:
        return None
    if not path.endswith((".py", ".onnx")):
        path += ".onnx" if chosen == ONNX_FILES else ".py"
    return RunExport(window, run_dir, path).start()
