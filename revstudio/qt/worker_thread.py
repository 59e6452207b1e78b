"""Work off the UI thread: one daemon thread per kind of job, a queue, and the UI thread told when a job is done.

The editor's memory estimate (``estimate_worker``) and the Runs tab's several-run detail
(``runs.compare_worker``) both hand work to a thread and look for its result later. A :class:`Worker`
is one daemon thread serving its jobs in the order submitted, started with the first job (and again if
it ever ended); submitting never waits for it. A :class:`Job` is cancelled (it stops at its next step,
or does not begin), tells whether it is done, and can be waited on; what it computes is its
:meth:`Job.compute`, which reads only what it was given, writes nothing but its own result and touches
no Qt object. An exception there (a plugin's ``sys.exit()`` too) is kept in ``error`` for the UI thread
to report, and the thread lives on.

A job computes only while the cyclic collector is paused (``core.nogc``, counted across threads): a
collection it started would finalise the UI thread's garbage, Qt objects included, on the wrong thread.
The UI thread holds a pause from submitting until the worker has opened its own, so the worker's
wake-up is covered too; only its few steps back to waiting run with the collector on.

No signal crosses threads: the UI thread polls :meth:`Job.done` (a :class:`Delivery` does it with a
timer and calls back on the UI thread), so a window closed meanwhile leaves the job nothing to emit
into. :meth:`Worker.stop` ends the thread once the job under way has stopped (those queued are
cancelled), which the application does as it quits (waiting at most :data:`QUIT_WAIT_S` for a job
under way).
"""
from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QTimer

from revstudio.core import nogc

QUIT_WAIT_S = 1.0  # how long quitting waits for a job under way to reach its next step (its thread is a daemon)


class Worker:
    """One daemon thread named ``name`` running the jobs submitted to it, one at a time, oldest first."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._cond = threading.Condition()
        self._queue: collections.deque[Job] = collections.deque()
        self._thread: threading.Thread | None = None
        self._stopping = False  # (the thread in ``_thread`` is to end: a submit then starts another)
        self._pending = 0  # jobs submitted and not yet stopped
        self._started = 0  # jobs submitted so far
        self._hooked = False  # stop() connected to the application's aboutToQuit

    def submit(self, job: Job) -> None:
        """Queue ``job`` (starting the thread if none runs); returns at once."""
        nogc.hold()  # released by the worker inside its own pause: its wake-up allocates
        with self._cond:
            self._queue.append(job)
            self._pending += 1
            self._started += 1
            if self._thread is None or not self._thread.is_alive() or self._stopping:
                self._stopping = False
                thread = threading.Thread(target=lambda: self._serve(thread), name=self.name, daemon=True)
                self._thread = thread
                thread.start()
            self._cond.notify()
        app = QCoreApplication.instance()
        if not self._hooked and app is not None:
            self._hooked = True
            app.aboutToQuit.connect(lambda: self.stop(QUIT_WAIT_S))

    def busy(self) -> bool:
        """Whether a job is queued or under way."""
        with self._cond:
            return self._pending > 0

    def started(self) -> int:
        """How many jobs have been submitted so far."""
        with self._cond:
            return self._started

    def alive(self) -> bool:
        """Whether the thread is running (waiting for a job or computing one)."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def stop(self, timeout: float = 5.0) -> bool:
        """Cancel every job, let the one under way reach its next step and end the thread (a later
        :meth:`submit` starts a new one). Returns whether the thread has ended within ``timeout`` s."""
        with self._cond:
            self._stopping = True
            dropped = list(self._queue)
            self._queue.clear()
            thread = self._thread
            self._cond.notify_all()
        for job in dropped:  # (never begun: done, with no result, so no one waits on them for ever)
            job.cancel()
            job._skip(self)
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _serve(self, me: threading.Thread) -> None:
        while True:
            with self._cond:
                while not self._queue and not (self._stopping or self._thread is not me):
                    self._cond.wait()
                if self._stopping or self._thread is not me:  # (stopped; or stopped and replaced)
                    return
                job = self._queue.popleft()
            job._run(self)

    def _stopped_one(self) -> None:
        with self._cond:
            self._pending -= 1


class Job:
    """One piece of work for :attr:`worker`: :meth:`start` queues it, :meth:`compute` (a subclass's) does it."""

    worker: Worker  # (each kind of job names the thread that runs it)

    def __init__(self) -> None:
        self.error: BaseException | None = None  # what compute raised
        self.thread: int | None = None  # the thread that ran it (what tests read)
        self._cancelled = threading.Event()
        self._done = threading.Event()

    def compute(self) -> None:
        """The work, on the worker thread; it may look at :meth:`cancelled` between its steps."""
        raise NotImplementedError

    def let_go(self) -> None:
        """Drop what the job was given, once it has stopped (run, failed or skipped): a big input is
        not kept for as long as someone holds the job."""

    def start(self) -> None:
        """Queue the job for its worker; returns at once."""
        self.worker.submit(self)

    def cancel(self) -> None:
        """Its result is not wanted: it stops at its next step (or does not begin)."""
        self._cancelled.set()

    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job has stopped (True), or ``timeout`` seconds have passed (False)."""
        return self._done.wait(timeout)

    def _run(self, worker: Worker) -> None:
        with nogc.paused():
            nogc.release()  # (the hold taken when it was submitted)
            self.thread = threading.get_ident()
            try:
                if not self._cancelled.is_set():
                    self.compute()
            except BaseException as exc:  # handed to the UI thread, which reports it in words
                self.error = exc  # (a plugin's sys.exit() too: the worker thread lives on)
            finally:
                self.let_go()
                worker._stopped_one()
                self._done.set()

    def _skip(self, worker: Worker) -> None:
        nogc.release()  # (the hold its submit took, which no worker will release now)
        self.let_go()
        worker._stopped_one()
        self._done.set()


class Delivery(QObject):
    """Polls one job at a time every ``interval_ms`` and calls ``deliver(job)`` on the UI thread once it is
    done, unless it was dropped meanwhile (:meth:`drop`, or a newer :meth:`watch`)."""

    def __init__(self, interval_ms: int, deliver: Callable[[Any], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.job: Job | None = None
        self._deliver = deliver
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._check)

    def watch(self, job: Job) -> None:
        """Deliver ``job`` when done; a job watched before is cancelled and never delivered."""
        self.drop()
        self.job = job
        self._timer.start()

    def drop(self) -> None:
        if self.job is not None:
            self.job.cancel()
        self.job = None
        self._timer.stop()

    def _check(self) -> None:
        job = self.job
        if job is None or not job.done():
            return
        self.job = None
        self._timer.stop()
        self._deliver(job)
