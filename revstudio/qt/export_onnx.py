"""File > Export ONNX…: the project as the editor holds it, as an ONNX file, by ``revstudio export SNAPSHOT
-o OUT.onnx --json`` in a child process (:class:`revstudio.qt.runs.export_run.RunExport`, the Runs tab's
export): torch and the exporter never load in the editor, the window keeps painting through the seconds
the export and its onnxruntime check take, and a refusal (a layer ONNX lacks, a flow's ActNorm that never
saw a batch, a missing package) is shown in the command's words. The snapshot is a temporary project
file, removed once the child has answered.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog

from revstudio.core.project_format import SNAPSHOT
from revstudio.qt.code_view import default_export_name, export_refusal
from revstudio.qt.runs.export_run import ONNX_FILES, RunExport


def default_onnx_name(document: Any) -> str:
    """Where the file dialog starts: the code export's default with ``.onnx`` for ``.py``."""
    return str(Path(default_export_name(document)).with_suffix(".onnx"))


def export_onnx(window: Any, document: Any, path: str) -> RunExport:
    """Export the document's graph to ``path`` (an ``.onnx`` file) in a child; its answer arrives later."""
    from revstudio.core.project import dumps

    folder = tempfile.mkdtemp(prefix="revstudio-onnx-")
    snapshot = os.path.join(folder, SNAPSHOT)  # (the child reads a project file, as a run's snapshot is one)
    with open(snapshot, "w", encoding="utf-8") as handle:
        handle.write(dumps(document.graph))
    name = Path(getattr(document, "path", None) or "").stem or document.graph.name or "the project"
    return RunExport(window, Path(snapshot), path, name=name,
                     done=lambda: shutil.rmtree(folder, ignore_errors=True)).start()


def export_onnx_with_dialog(window: Any, document: Any) -> RunExport | None:
    """Ask where the ONNX file goes, then export (None where nothing started: the graph's errors or Cancel)."""
    problem = export_refusal(document)
    if problem is not None:  # before asking for a file name: the answer would be thrown away
        window.dialogs.error(window, "Cannot export", problem)
        return None
    path, _chosen = QFileDialog.getSaveFileName(window, "Export ONNX", default_onnx_name(document), ONNX_FILES)
    if not path:
        return None
    if not path.endswith(".onnx"):
        path += ".onnx"
    return export_onnx(window, document, path)
