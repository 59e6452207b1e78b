"""A ``revstudio`` command with ``--json`` run on a snapshot of the project in a child process.

The editor never loads torch and never waits: the project is written to a temporary folder,
the command runs there under QProcess, and its one JSON line (or its error, in words) comes
back through ``finished``. ``cancel`` stops it; the folder goes with the process.
"""
from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from PySide6.QtCore import QObject, QProcess, Signal

from revstudio.core.project_format import SNAPSHOT

PROJECT = "{project}"  # in ``start``'s arguments: the snapshot's path


class ChildJson(QObject):
    """One child at a time; ``result`` (the JSON object) or ``message`` (why none) once finished."""

    finished = Signal()

    def __init__(self, what: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.what = what  # "sweep": the words of a failure ("sweep failed: ...")
        self.process: QProcess | None = None
        self.result: dict[str, Any] | None = None
        self.message = ""
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None

    def start(self, graph: Any, args: list[str]) -> bool:
        """Run ``revstudio ARGS`` (``PROJECT`` standing for the snapshot); False if one runs already."""
        if self.process is not None:
            return False
        from revstudio.cli import child_argv
        from revstudio.core.project import dumps

        self._tmp = tempfile.TemporaryDirectory(prefix="revstudio-child-")
        path = os.path.join(self._tmp.name, SNAPSHOT)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(dumps(graph))
        argv = child_argv("revstudio", *[path if a == PROJECT else a for a in args])
        process = QProcess(self)
        process.setWorkingDirectory(self._tmp.name)
        process.setProgram(argv[0])
        process.setArguments(argv[1:])
        process.finished.connect(self._on_finished)
        process.errorOccurred.connect(self._on_error)
        self.process = process
        self.result, self.message = None, ""
        process.start()
        return True

    def cancel(self) -> None:
        if self.process is not None:
            self.process.kill()

    def _on_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            self._done(None, f"could not start the {self.what} process "
                             f"({self.process.program() if self.process else '?'})")

    def _on_finished(self, code: int, status: QProcess.ExitStatus) -> None:
        process = self.process
        if process is None:
            return
        out = bytes(process.readAllStandardOutput().data()).decode("utf-8", "replace").strip()
        err = bytes(process.readAllStandardError().data()).decode("utf-8", "replace").strip()
        data: dict[str, Any] | None = None
        try:
            data = json.loads(out.splitlines()[-1]) if out else None
        except ValueError:
            data = None
        if status == QProcess.ExitStatus.CrashExit:
            self._done(None, f"{self.what} stopped" + (f": {err[-300:]}" if err else ""))
        elif not isinstance(data, dict) or "error" in data or code != 0:
            why = (data if isinstance(data, dict) else {}).get("error") or err[-300:] or f"exit code {code}"
            self._done(None, f"{self.what} failed: {why}")
        else:
            self._done(data, "")

    def _done(self, data: dict[str, Any] | None, message: str) -> None:
        if self.process is not None:
            self.process.deleteLater()
        self.process = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        self.result, self.message = data, message
        self.finished.emit()
