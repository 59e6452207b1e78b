"""The one worker base the editor's estimate and the Runs tab's comparison both use (``qt.worker_thread``).

Each had its own copy of the daemon-thread queue; these are the behaviours they share, on a worker of
the test's own: a newer request supersedes an older one, a cancelled job does not compute, results
reach the UI thread, and no thread is left running once the worker is stopped or the app quits.
"""
from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from revstudio.qt import estimate_worker
from revstudio.qt.runs import compare_worker
from revstudio.qt.worker_thread import Delivery, Job, Worker


class Step(Job):
    """A job that records where it ran and waits for ``gate`` (when given) before it answers."""

    def __init__(self, worker: Worker, value: int, gate: threading.Event | None = None) -> None:
        super().__init__()
        self.worker = worker
        self.value, self.gate = value, gate
        self.answer: int | None = None
        self.inside = threading.Event()

    def compute(self) -> None:
        self.inside.set()
        if self.gate is not None:
            assert self.gate.wait(20)
        if self.value < 0:
            raise ValueError(f"no square of {self.value} here")
        self.answer = self.value * self.value


def test_both_workers_are_the_one_base() -> None:
    assert isinstance(estimate_worker.WORKER, Worker) and isinstance(compare_worker.WORKER, Worker)
    assert issubclass(estimate_worker.EstimateJob, Job) and issubclass(compare_worker.CompareJob, Job)
    assert estimate_worker.WORKER is not compare_worker.WORKER  # (a long comparison never delays an estimate)


def test_a_newer_request_supersedes_an_older_one_and_the_result_reaches_the_ui_thread(qtbot: Any) -> None:
    worker = Worker("test-worker")
    delivered: list[tuple[int | None, int]] = []
    delivery = Delivery(5, lambda job: delivered.append((job.answer, threading.get_ident())))
    gate = threading.Event()
    old, new = Step(worker, 3, gate), Step(worker, 4)
    old.start()
    delivery.watch(old)
    assert old.inside.wait(20)  # (under way)
    new.start()
    delivery.watch(new)  # the newer request: the older is cancelled and never delivered
    assert old.cancelled() and not new.cancelled()
    gate.set()
    qtbot.waitUntil(lambda: bool(delivered), timeout=20_000)
    qtbot.wait(30)
    assert delivered == [(16, threading.get_ident())]  # only the newest, on this (the UI) thread
    assert new.thread is not None and new.thread != threading.get_ident() and old.thread == new.thread
    assert worker.stop()


def test_a_cancelled_job_does_not_compute_and_a_failing_one_leaves_the_thread_running() -> None:
    worker = Worker("test-worker")
    gate = threading.Event()
    first, queued = Step(worker, 2, gate), Step(worker, 5)
    first.start()
    queued.start()
    assert first.inside.wait(20) and worker.busy() and worker.started() == 2
    queued.cancel()
    gate.set()
    assert queued.wait(20) and queued.answer is None and not queued.inside.is_set()
    assert first.wait(20) and first.answer == 4
    failing, after = Step(worker, -1), Step(worker, 6)
    failing.start()
    after.start()
    assert failing.wait(20) and isinstance(failing.error, ValueError) and "-1" in str(failing.error)
    assert after.wait(20) and after.answer == 36 and not worker.busy()
    assert worker.stop()


def test_stop_ends_the_thread_and_drops_the_jobs_queued() -> None:
    worker = Worker("test-worker")
    gate = threading.Event()
    running, queued = Step(worker, 2, gate), Step(worker, 3)
    running.start()
    queued.start()
    assert running.inside.wait(20) and worker.alive()
    threading.Timer(0.2, gate.set).start()  # (the job under way reaches its end meanwhile)
    assert worker.stop(20)
    assert not worker.alive() and not any(t.name == "test-worker" for t in threading.enumerate())
    assert running.done() and running.answer == 4  # the one under way finished
    assert queued.done() and queued.cancelled() and queued.answer is None and not worker.busy()
    again = Step(worker, 7)  # a later job starts a new thread
    again.start()
    assert again.wait(20) and again.answer == 49
    assert worker.stop(20) and not worker.alive()


QUIT = """
import threading
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
app = QApplication([])
from revstudio.qt.worker_thread import Job, Worker
worker = Worker("quit-worker")
class Nap(Job):
    worker = worker
    def compute(self):
        threading.Event().wait(0.3)
Nap().start()
QTimer.singleShot(50, app.quit)
app.exec()
print("alive" if worker.alive() else "ended", [t.name for t in threading.enumerate() if t.name == "quit-worker"])
"""


def test_no_worker_thread_is_left_running_once_the_app_quits(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {"QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", QUIT], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ended []"
