"""The training run from the editor: one ``revstudio train --json`` child process at a time.

Train writes a snapshot of the project as drawn into a fresh run directory
and starts ``revstudio train SNAPSHOT --json --out RUN_DIR`` in a
:class:`QProcess` (never a thread of the GUI process: a crash, an
out-of-memory or a kill of the run cannot take the editor down). Rows read
from its stdout are filed into a :class:`RunData` that the plots and the runs
panel draw on their own timers. Stop sends SIGTERM (the worker checkpoints
and exits within 2 s) and kills it if it does not.
"""
from __future__ import annotations

import errno
import os
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QElapsedTimer,
    QObject,
    QProcess,
    QProcessEnvironment,
    QTimer,
    Signal,
)

from revstudio.cli import child_argv  # (re-exported: child_query starts its children with it too)
from revstudio.core.tempfiles import write_atomic
from revstudio.qt import report_facts as rf
from revstudio.qt.document import Document
from revstudio.qt.plots.rows import LinePump, LineSplitter, RunData
from revstudio.qt.training import section as sec
from revstudio.training.runs import SNAPSHOT, record_end
from revstudio.training.runs_folder import app_runs_folder, make_runs_folder

STOP_GRACE_MS = 1500   # SIGTERM first; a worker still alive after this is killed (Stop within 2 s)
STDERR_KEEP = 8000     # characters of stderr kept for a failed run's message
PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])


def _remove_unstarted(run_dir: Path) -> bool:
    """Remove a run folder that holds only the snapshot Train wrote (the worker never wrote to it, or
    took away what it wrote: a run refused before it started)."""
    try:
        if [p.name for p in run_dir.iterdir()] != [SNAPSHOT]:
            return False
        (run_dir / SNAPSHOT).unlink()
        run_dir.rmdir()
    except OSError:
        return False
    return True


def run_folder_advice(exc: OSError, run_dir: Path) -> str:
    """What to do about a run folder that cannot be made, by the reason (as RunDirError tells a
    terminal's --out, in the app's words: its runs go in ``runs/`` beside the project)."""
    if exc.errno == errno.ENOTDIR:
        blocker = next((p for p in run_dir.parents if p.exists() and not p.is_dir()), run_dir.parent)
        return (f"{blocker} is a file, where the runs folder should be; move or rename it, or save the "
                "project in another folder (File > Save As)")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free some space on that disk, or save the project on another disk (File > Save As)"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (f"{run_dir.parent} cannot be written; save the project in a folder you can write "
                "(File > Save As)")
    return "free some space, or save the project in a folder you can write (File > Save As)"


def child_environment() -> QProcessEnvironment:
    """The user's environment, plus this revstudio on PYTHONPATH and unbuffered output."""
    env = QProcessEnvironment.systemEnvironment()
    old = env.value("PYTHONPATH", "")
    env.insert("PYTHONPATH", PACKAGE_ROOT + (os.pathsep + old if old else ""))
    env.insert("PYTHONUNBUFFERED", "1")
    return env


def runs_root(project_path: str | None) -> Path:
    """``<project dir>/runs`` (CONTRACTS section 4); an unsaved project's runs, and a shipped example's
    (opened by its path: revstudio's own files are not the user's to write in), live in the app's data folder."""
    from revstudio.resources import is_shipped

    if project_path and not is_shipped(project_path):
        return Path(project_path).resolve().parent / "runs"
    return Path(app_runs_folder())  # (revstudio's data folder, as the CLI's: not Qt's AppDataLocation)


def run_stem(document: Document) -> str:
    """What a project's run folders are named after: its file's name, or an unsaved one's name."""
    stem = Path(document.path).stem if document.path else document.graph.name
    return stem or "untitled"


def new_run_dir(root: Path, stem: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = root / f"{stem}-{stamp}"
    n = 2
    while path.exists():
        path = root / f"{stem}-{stamp}-{n}"
        n += 1
    return path


def worker_argv(snapshot: Path, run_dir: Path, resume: bool = False) -> list[str]:
    """The worker's command line (tests point this at a few-step run; packaging may change it)."""
    if resume:
        return child_argv("revstudio", "train", "--resume", str(run_dir), "--json")
    return child_argv("revstudio", "train", str(snapshot), "--json", "--out", str(run_dir))


class TrainController(QObject):
    """Starts, watches and stops the document's training run."""

    started = Signal(object)        # RunData of the new run
    changed = Signal(object)        # rows arrived (RunData)
    ended = Signal(object)          # the run is over (RunData; status finished/stopped/failed)
    message = Signal(str)           # one line for the status bar

    def __init__(self, document: Document, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.run: RunData | None = None        # the current or last run started here
        self.run_dir: Path | None = None
        self.run_removed = False  # the last run ended before it started and its folder was removed
        self.stderr = ""
        self._process: QProcess | None = None
        self._splitter = LineSplitter()
        self._pump: LinePump | None = None  # rows read but not filed yet (filed a few ms per turn)
        self._filing = False
        self._stopping = False
        self._killed = False  # Stop's grace period ran out and the worker was killed
        self._started_index = -1
        self._started_graph: Any = None
        self.clock = QElapsedTimer()
        self._final_s: float | None = None
        self._kill_timer = QTimer(self)
        self._kill_timer.setSingleShot(True)
        self._kill_timer.timeout.connect(self._kill)

    # ---- state --------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._process is not None and self._process.state() != QProcess.ProcessState.NotRunning

    @property
    def stopping(self) -> bool:
        """Stop was asked and the run has not ended yet."""
        return self.running and self._stopping

    def process_id(self) -> int:
        return int(self._process.processId()) if self.running and self._process is not None else 0

    def elapsed_s(self) -> float:
        """Seconds since the run's process started; once it has ended, its whole wall time
        (the progress line keeps the figure it showed, not the run's own clock without start-up)."""
        if self._final_s is not None:
            return self._final_s
        return self.clock.elapsed() / 1000.0 if self.clock.isValid() else 0.0

    def is_stale(self) -> bool:
        """Whether the document was edited since the running snapshot was taken."""
        return self.running and (self.document.graph is not self._started_graph
                                 or self.document.undo_stack.index() != self._started_index)

    # ---- starting -------------------------------------------------------------
    def refusal(self) -> str | None:
        """Why Train cannot start now, in words; None when it can."""
        if self.running and self.run is not None:
            total = f" of {self.run.total_steps}" if self.run.total_steps else ""
            return (f"A run is already training ({self.run.name}, step {self.run.step}{total}); "
                    "stop it first (Run > Stop, Shift+F5) or wait for it to finish.")
        problem = sec.validate(self.document.graph.training) or sec.data_problem(self.document.graph.training,
                                                                                   self.document.path)
        if problem:
            return f"The run settings are not valid: {problem}. Fix them in Run > Run Settings."
        return self.graph_problem()

    def graph_problem(self, doing: str = "training") -> str | None:
        """Why the drawn graph cannot be trained (or checked: ``doing``), naming its errors; None if it can."""
        return rf.graph_problem(self.document.graph, self.document.current_report(), doing)

    def start(self, init: str | None = None) -> str | None:
        """Snapshot the project and start a run; returns the reason when it was refused. ``init``:
        weights of one's own the run starts from (``revstudio train --init``, which checks them)."""
        reason = self.refusal()
        if reason:
            self.message.emit(reason)
            return reason
        run_dir = new_run_dir(runs_root(self.document.path), run_stem(self.document))
        try:
            make_runs_folder(run_dir.parent)
            run_dir.mkdir(parents=True)
            snapshot = run_dir / SNAPSHOT
            write_atomic(snapshot, sec.snapshot_text(self.document.graph, self.document.path))
        except OSError as exc:
            reason = f"Cannot create the run folder {run_dir}: {exc.strerror or exc}; {run_folder_advice(exc, run_dir)}"
            self.message.emit(reason)
            return reason
        argv = worker_argv(snapshot, run_dir) + (["--init", os.path.abspath(init)] if init else [])
        return self._launch(run_dir, argv, RunData(run_dir.name))

    def resume(self, run_dir: Path, data: RunData | None = None) -> str | None:
        """Continue a stopped run from its last checkpoint (``revstudio train --resume``)."""
        if self.running:
            reason = self.refusal() or "A run is already training."
            self.message.emit(reason)
            return reason
        if data is None and run_dir == self.run_dir and self.run is not None:
            data = self.run  # the run last started here: its curves are in memory already
        run = RunData(run_dir.name)
        if data is not None:  # keep the curves so far: the resumed rows continue them
            run = data
            run.status, run.message = "starting", None
        return self._launch(run_dir, worker_argv(run_dir / SNAPSHOT, run_dir, resume=True), run)

    def _launch(self, run_dir: Path, argv: list[str], run: RunData) -> str | None:
        process = QProcess(self)
        process.setProcessEnvironment(child_environment())
        process.setWorkingDirectory(str(run_dir))
        process.readyReadStandardOutput.connect(self._read_rows)
        process.readyReadStandardError.connect(self._read_errors)
        process.finished.connect(self._finished)
        process.errorOccurred.connect(self._error)
        self.run, self.run_dir, self.stderr, self.run_removed = run, run_dir, "", False
        self._splitter = LineSplitter()
        self._pump = LinePump(run)
        self._stopping = self._killed = False
        self._process = process
        self._started_index = self.document.undo_stack.index()
        self._started_graph = self.document.graph
        self.clock.start()
        self._final_s = None
        process.start(argv[0], argv[1:])
        self.started.emit(run)
        self.message.emit(f"Training {run.name} …")
        return None

    # ---- stopping ---------------------------------------------------------------
    def stop(self) -> bool:
        """Ask the run to stop (SIGTERM: it checkpoints and exits); kill it after the grace period."""
        if not self.running or self._process is None:
            return False
        self._stopping = True
        self._process.terminate()
        self._kill_timer.start(STOP_GRACE_MS)
        self.message.emit("Stopping the run …")
        return True

    def _kill(self) -> None:
        if self.running and self._process is not None:
            self._killed = True
            self._process.kill()

    def shutdown(self) -> None:
        """The window closes: stop the run and wait for it (a run never outlives its editor silently)."""
        process = self._process
        if process is None or not self.running:
            return
        self.stop()
        if not process.waitForFinished(STOP_GRACE_MS + 500):
            process.kill()
            process.waitForFinished(1000)

    # ---- the child's output ---------------------------------------------------------
    def _read_rows(self) -> None:
        process = self.sender()
        if process is not self._process or self.run is None:
            return
        if self._pump is None:
            return
        self._pump.push(self._splitter.feed(bytes(process.readAllStandardOutput().data())))  # type: ignore[attr-defined]
        if not self._filing:  # else the next turn files them
            self._file_rows()

    def _file_rows(self) -> None:
        """File a few milliseconds of rows; the rest wait for the next turn of the event loop (input first)."""
        self._filing = False
        pump = self._pump
        if pump is None or self.run is None or pump.run is not self.run:
            return
        if pump.pump():
            self.changed.emit(self.run)
        if len(pump):
            self._filing = True
            QTimer.singleShot(0, self, self._file_rows)

    def _read_errors(self) -> None:
        process = self.sender()
        if process is self._process and process is not None:
            text = bytes(process.readAllStandardError().data()).decode("utf-8", "replace")  # type: ignore[attr-defined]
            self.stderr = (self.stderr + text)[-STDERR_KEEP:]

    def stderr_tail(self, lines: int = 12) -> list[str]:
        return [ln for ln in self.stderr.strip().splitlines() if ln.strip()][-lines:]

    def _error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart and self.sender() is self._process:
            self._finished(-1, QProcess.ExitStatus.CrashExit)

    def _finished(self, code: int, status: QProcess.ExitStatus) -> None:
        process = self.sender()
        if process is not self._process or self.run is None:
            return
        self._kill_timer.stop()
        self._final_s = self.elapsed_s()
        self._read_rows_from(process)
        run = self.run
        crashed = status == QProcess.ExitStatus.CrashExit
        if run.status == "stopped" or (self._stopping and not run.ended):
            run.status = "stopped"
            if crashed and self._killed:
                run.message = f"killed after the {STOP_GRACE_MS / 1000:g} s grace period"
            elif crashed and not run.rows:  # SIGTERM while it imported torch: nothing trained, nothing kept
                run.message = "stopped while the worker was starting, before it trained"
                if self.run_dir is not None and _remove_unstarted(self.run_dir):
                    run.message += "; its run folder held only the snapshot and was removed"
                    self.run_removed = True
            elif crashed:
                run.message = "ended by Stop before it could save a checkpoint"
            self.message.emit(f"Run {run.name} stopped at step {run.step}"
                              + (f": {run.message}" if run.message else ""))
        elif run.status == "finished" and code == 0 and not crashed:
            self.message.emit(f"Run {run.name} finished: {run.early or f'step {run.step}'}")
        else:
            run.status = "failed"
            if code == -1:  # never started
                run.message = f"the worker could not be started: {process.errorString()}"
            elif crashed:  # a signal (SIGKILL, the out-of-memory killer, a segfault)
                run.message = "the worker process was killed" + (f" (after: {run.message})" if run.message else "")
            elif run.message is None:
                run.message = f"the worker exited with code {code}"
            if not run.info and self.run_dir is not None:  # refused before it started: the worker took
                self.run_removed = _remove_unstarted(self.run_dir)  # its files away, the snapshot goes too
            self.message.emit(f"Train was refused before it started (no run was kept): {run.message}"
                              if self.run_removed else f"Run {run.name} failed: {run.message}")
        if self.run_dir is not None and run.status in ("failed", "stopped"):
            # a worker that died of a full disk could not rewrite status.json, which would read as
            # "killed" from then on: keep the ending seen here (written only if there is room by now)
            record_end(str(self.run_dir), run.status, run.message or f"the run {run.status}")
        self._process = None
        process.deleteLater()  # type: ignore[union-attr]
        self.ended.emit(run)

    def _read_rows_from(self, process: Any) -> None:
        if self.run is None:
            return
        try:
            data = bytes(process.readAllStandardOutput().data())
            err = bytes(process.readAllStandardError().data()).decode("utf-8", "replace")
        except RuntimeError:
            return
        self.stderr = (self.stderr + err)[-STDERR_KEEP:]
        if self._pump is not None:  # the run's last rows (all of them) decide how it ended
            self._pump.push(self._splitter.feed(data) + self._splitter.flush())
            self._pump.pump(everything=True)
