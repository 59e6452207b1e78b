"""The editor's export worker: one child process that turns project text into code.

Exporting builds the torch model (torch import, layer construction), which
takes seconds on a big graph. It runs in ``python -m revstudio.codegen.serve``
driven through a :class:`QProcess`, never in the GUI process: no Python thread
runs beside Qt's event loop (a worker thread there crashed the interpreter in
CPython's garbage collector), torch stays out of the editor, and a crash while
exporting costs one message, not the user's work. One worker serves every view
of the application; it starts on the first request and is restarted on the
next request after it died.
"""
from __future__ import annotations

import atexit
import json
import os
from pathlib import Path

from PySide6.QtCore import (
    QCoreApplication,
    QEventLoop,
    QObject,
    QProcess,
    QProcessEnvironment,
    QTimer,
    Signal,
)

from revstudio.cli import child_argv, child_cwd, child_env

STDERR_KEEP = 4000  # characters of the worker's stderr kept for the message when it dies


def worker_command() -> tuple[str, list[str]]:
    """Program and arguments that start a worker: ``child_argv``, the one argv builder."""
    argv = child_argv("revstudio.codegen.serve")
    return argv[0], argv[1:]


class ExportWorker(QObject):
    """Sends export requests to the child process and signals each reply."""

    finished = Signal(int, str, bool)  # request id, source (or an explanation), ok

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._process: QProcess | None = None
        self._next_id = 0
        self._pending: list[int] = []  # ids sent and not yet answered, in order
        self._buffer = b""
        self._stderr = ""

    # -- requests ----------------------------------------------------------
    def request(self, project_text: str, with_training: bool = False) -> int:
        """Queue one export; its reply arrives as ``finished(id, ...)`` with the returned id."""
        self._next_id += 1
        ident = self._next_id
        process = self._ensure_started()
        if process is None:
            QTimer.singleShot(0, lambda: self.finished.emit(ident, self._failure("could not be started"), False))
            return ident
        line = json.dumps({"id": ident, "project": project_text, "with_training": bool(with_training)}) + "\n"
        self._pending.append(ident)
        process.write(line.encode("ascii"))
        return ident

    def export(self, project_text: str, with_training: bool = False, timeout_ms: int = 120_000) -> tuple[str, bool]:
        """Wait (painting and handling input meanwhile) for one export: for File > Export."""
        loop = QEventLoop()
        result: dict[int, tuple[str, bool]] = {}
        ident = -1

        def done(got: int, source: str, ok: bool) -> None:
            if got == ident:
                result[got] = (source, ok)
                loop.quit()

        self.finished.connect(done)
        try:
            ident = self.request(project_text, with_training)
            QTimer.singleShot(timeout_ms, loop.quit)
            if ident not in result:
                loop.exec(QEventLoop.ProcessEventsFlag.ExcludeUserInputEvents)
        finally:
            self.finished.disconnect(done)
        if ident not in result:
            return f"# The export took longer than {timeout_ms // 1000} s and was abandoned.\n", False
        return result[ident]

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.state() != QProcess.ProcessState.NotRunning

    def process_id(self) -> int:
        return int(self._process.processId()) if self.running and self._process is not None else 0

    # -- the child process ---------------------------------------------------
    def _ensure_started(self) -> QProcess | None:
        if self.running:
            return self._process
        if self._process is not None:
            self._process.deleteLater()
        process = QProcess(self)
        env = QProcessEnvironment()
        package_root = str(Path(__file__).resolve().parents[2])  # so the child imports this revstudio
        values = child_env()  # no current folder on sys.path, in the child or its children
        values["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, values.get("PYTHONPATH")) if p)
        values["PYTHONUNBUFFERED"] = "1"
        for key, value in values.items():
            env.insert(key, value)
        process.setProcessEnvironment(env)
        process.setWorkingDirectory(child_cwd())  # a fixed folder: never the one the app started in
        process.readyReadStandardOutput.connect(self._read_replies)
        process.readyReadStandardError.connect(self._read_errors)
        process.finished.connect(self._died)
        self._process, self._buffer, self._stderr = process, b"", ""
        program, args = worker_command()
        process.start(program, args)
        if not process.waitForStarted(10_000):  # fork/exec only: the imports happen afterwards
            self._stderr = process.errorString()
            self._process = None
            process.deleteLater()
            return None
        return process

    def _read_replies(self) -> None:
        process = self.sender()
        if process is not self._process or process is None:
            return
        self._buffer += bytes(process.readAllStandardOutput().data())
        *lines, self._buffer = self._buffer.split(b"\n")
        for raw in lines:
            try:
                reply = json.loads(raw.decode("utf-8"))
                ident = int(reply["id"])
            except (ValueError, KeyError, TypeError):
                continue  # not a reply (the worker never prints anything else there)
            if ident in self._pending:
                self._pending.remove(ident)
            self.finished.emit(ident, str(reply.get("source", "")), bool(reply.get("ok")))

    def _read_errors(self) -> None:
        process = self.sender()
        if process is self._process and process is not None:
            text = bytes(process.readAllStandardError().data()).decode("utf-8", "replace")
            self._stderr = (self._stderr + text)[-STDERR_KEEP:]

    def _died(self, code: int, status: QProcess.ExitStatus) -> None:
        process = self.sender()
        if process is not self._process:
            return
        how = "crashed" if status == QProcess.ExitStatus.CrashExit else f"stopped (exit code {code})"
        pending, self._pending = self._pending, []
        for ident in pending:
            self.finished.emit(ident, self._failure(how), False)

    def _failure(self, how: str) -> str:
        lines = [f"# The export worker {how}; it starts again with the next edit."]
        tail = [line for line in self._stderr.strip().splitlines() if line.strip()][-8:]
        if tail:
            lines += ["#", "# What it printed last:"] + [f"#   {line}" for line in tail]
        return "\n".join(lines) + "\n"

    def shutdown(self, wait_ms: int = 3000) -> None:
        """Close the worker's input (it exits by itself), killing it if it does not."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.state() != QProcess.ProcessState.NotRunning:
                process.closeWriteChannel()
                if not process.waitForFinished(wait_ms):
                    process.kill()
                    process.waitForFinished(1000)
        except RuntimeError:  # already deleted with the application
            pass


_shared: ExportWorker | None = None


def shared_worker() -> ExportWorker:
    """The application's one export worker (created on first use)."""
    global _shared
    if _shared is None:
        _shared = ExportWorker(QCoreApplication.instance())
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(_shared.shutdown)
    return _shared


@atexit.register
def _stop_shared() -> None:
    global _shared
    worker, _shared = _shared, None
    if worker is not None:
        try:
            worker.shutdown(1000)
        except RuntimeError:  # the Qt object went with the application
            pass

