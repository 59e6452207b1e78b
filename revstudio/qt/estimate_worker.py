"""The editor's memory estimate off the UI thread: one job, one short-lived thread.

The UI thread copies the checked graph (``Graph.copy()``, between two edits, so it is never
torn) and hands it with the check's :class:`~revstudio.diagnostics.check.EstimateRest` to an
:class:`EstimateJob`; its thread makes the estimate of the copy and walks its peaks and facts
(``EstimateRest.compute``). The job reads the copy, the check's report (which no one changes
once made: the next edit's check makes a new one) and the node registry (loaded before the
first check, never changed after); it writes nothing but its own result and touches no Qt
object. The UI thread polls :meth:`EstimateJob.done` (no signal crosses threads: a document
closed meanwhile leaves the job nothing to emit into) and applies the result only while no edit
came since; a later edit cancels the job, which stops at its next step (estimate, peaks,
facts). A document's jobs run one after another: each starts once the one before has stopped.

The thread allocates only while the cyclic collector is paused (``core.nogc.paused``, counted
across threads), its start-up included: a collection it started would finalise the UI
thread's garbage, Qt objects included, on the wrong thread.

The estimate is pure Python, so the UI thread still needs the GIL for every slot and paint it
runs meanwhile; CPython hands the GIL to a waiting thread only after the switch interval (5 ms
by default), and each handoff is paid again for each call from Qt into Python. While a job runs
the interval is :data:`SWITCH_S` (``benchmarks/bench_estimate_thread.py`` measures both).
"""
from __future__ import annotations

import sys
import threading
from typing import Any

from revstudio.core.nogc import paused

SWITCH_S: float | None = 0.001  # the GIL switch interval while an estimate runs (None: leave it as it is)

_lock = threading.Lock()
_running = 0  # jobs computing, in all documents
_alive = 0  # jobs started whose thread has not ended, in all documents
_started = 0  # jobs started so far, in all documents
_interval = 0.005  # the switch interval before the first of them began


def _begin() -> None:
    global _running, _interval
    with _lock:
        if _running == 0:
            _interval = sys.getswitchinterval()
            if SWITCH_S is not None and SWITCH_S < _interval:
                sys.setswitchinterval(SWITCH_S)
        _running += 1


def _end() -> None:
    global _running, _alive
    with _lock:
        _running -= 1
        _alive -= 1
        if _running == 0:
            sys.setswitchinterval(_interval)


def busy() -> bool:
    """Whether a job of any document is still under way (what tests wait for before reading the
    figures a view shows; a document applies a finished job's result at its next poll)."""
    with _lock:
        return _alive > 0


def started() -> int:
    """How many jobs all documents have started so far."""
    with _lock:
        return _started


class EstimateJob:
    """One estimate of ``snapshot`` (a graph copy nobody else holds) with ``rest``, on its own
    thread, after ``before`` (the document's previous job, if any) has stopped."""

    def __init__(self, rest: Any, snapshot: Any, before: EstimateJob | None = None) -> None:
        self.rest = rest
        self.result: Any = None  # an EstimateResult; None until done, or when cancelled
        self.error: Exception | None = None  # what compute raised (walking the peaks)
        self._snapshot = snapshot
        self._before = before
        self._cancelled = threading.Event()
        self._done = threading.Event()
        self._entered = threading.Event()
        self._thread = threading.Thread(target=self._run, name="revstudio-estimate", daemon=True)

    def start(self) -> None:
        global _alive, _started
        with _lock:
            _alive += 1
            _started += 1
        with paused():  # the thread's start-up allocates: no collection may start there
            self._thread.start()
            self._entered.wait()

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

    def _run(self) -> None:
        with paused():
            self._entered.set()
            _begin()
            try:
                before, self._before = self._before, None
                if before is not None:
                    before.wait()
                if not self._cancelled.is_set():
                    self.result = self.rest.compute(self._snapshot, cancelled=self._cancelled.is_set)
            except Exception as exc:  # handed to the UI thread, which reports it as an inline failure
                self.error = exc
            finally:
                _end()
                self._done.set()
