"""One question answered by a short-lived child process that prints one JSON object.

Device detection, a data preview, ``revstudio gradcheck --json`` and
``revstudio memory --json`` all import torch; they run as children through
:class:`ChildQuery` (a :class:`QProcess`, CONTRACTS section 6), and their
answer arrives as a signal, so the editor keeps painting meanwhile.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QProcess, Signal

from revstudio.cli import child_cwd
from revstudio.qt.training.controller import child_argv, child_environment

STDERR_KEEP = 4000


class ChildQuery(QObject):
    """Runs ``python -P -m MODULE ARGS`` and emits ``answered(dict)`` with its JSON (or an error)."""

    answered = Signal(dict)

    def __init__(self, module: str, args: list[str], cwd: str | Path | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.argv = child_argv(module, *args)
        self.process = QProcess(self)
        self.process.setProcessEnvironment(child_environment())
        # (a folder of its own, as the export worker's: the user's home may not exist, as the nobody user's)
        self.process.setWorkingDirectory(str(cwd or child_cwd()))
        self.process.finished.connect(self._done)
        self.process.errorOccurred.connect(self._error)
        self.answer: dict[str, Any] | None = None
        self._out = b""
        self._err = ""
        self.process.readyReadStandardOutput.connect(self._read)
        self.process.readyReadStandardError.connect(self._read_err)

    def start(self) -> ChildQuery:
        self.process.start(self.argv[0], self.argv[1:])
        return self

    @property
    def running(self) -> bool:
        return self.process.state() != QProcess.ProcessState.NotRunning

    def kill(self) -> None:
        if self.running:
            self.process.kill()
            self.process.waitForFinished(1000)

    def _read(self) -> None:
        self._out += bytes(self.process.readAllStandardOutput().data())

    def _read_err(self) -> None:
        text = bytes(self.process.readAllStandardError().data()).decode("utf-8", "replace")
        self._err = (self._err + text)[-STDERR_KEEP:]

    def _error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            self._emit({"error": f"could not start {' '.join(self.argv[:4])}: {self.process.errorString()}"})

    def _done(self, code: int, status: QProcess.ExitStatus) -> None:
        self._read()
        self._read_err()
        answer: dict[str, Any] | None = None
        for line in reversed(self._out.decode("utf-8", "replace").splitlines()):
            if line.strip().startswith("{"):
                try:
                    answer = json.loads(line)
                    break
                except ValueError:
                    continue
        if answer is None:
            tail = [ln for ln in self._err.strip().splitlines() if ln.strip()][-6:]
            how = "was killed" if status == QProcess.ExitStatus.CrashExit else f"exited with code {code}"
            answer = {"error": f"the child process {how}" + (": " + " / ".join(tail) if tail else "")}
        answer.setdefault("exit_code", code)
        self._emit(answer)

    def _emit(self, answer: dict[str, Any]) -> None:
        if self.answer is None:
            self.answer = answer
            self.answered.emit(answer)
