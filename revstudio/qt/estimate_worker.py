"""The editor's memory estimate off the UI thread: jobs run one at a time on one worker thread.

The UI thread copies the checked graph (``Graph.copy()``, between two edits, so it is never
torn) and hands it with the check's :class:`~revstudio.diagnostics.check.EstimateRest` to an
:class:`EstimateJob`; the worker makes the estimate of the copy and walks its peaks and facts
(``EstimateRest.compute``). A job reads the copy, the check's report (which no one changes once
made: the next edit's check makes a new one) and the node registry (loaded by the first check,
never changed after); it writes nothing but its own result and touches no Qt object. The UI
thread polls :meth:`EstimateJob.done` (no signal crosses threads: a document closed meanwhile
leaves the job nothing to emit into) and applies the result only while no edit came since; a
later edit cancels the job, which stops at its next step (estimate, peaks, facts) or is skipped.
Submitting never waits for the worker: one daemon thread serves every document, started with
the first job (and again if it ever ended).

The worker computes only while the cyclic collector is paused (``core.nogc``, counted across
threads): a collection it started would finalise the UI thread's garbage, Qt objects included,
on the wrong thread. The UI thread holds a pause from submitting a job until the worker has
opened its own, so the worker's wake-up is covered too; only its few steps back to waiting for
the next job run with the collector on.

The estimate is pure Python, so the UI thread still needs the GIL for every slot and paint it
runs meanwhile; CPython hands the GIL to a waiting thread only after the switch interval (5 ms
by default), paid again for each call from Qt into Python. While a job computes, the interval
is :data:`SWITCH_S` (``benchmarks/bench_estimate_thread.py`` measures both).
"""
from __future__ import annotations

import collections
import sys
import threading
from typing import Any

from revstudio.core import nogc

SWITCH_S: float | None = 0.001  # the GIL switch interval while a job computes (None: left as it is)

_cond = threading.Condition()
_queue: collections.deque[EstimateJob] = collections.deque()
_thread: threading.Thread | None = None
_pending = 0  # jobs submitted and not yet stopped
_started = 0  # jobs submitted so far


class EstimateJob:
    """One estimate of ``snapshot`` (a graph copy nobody else holds) with ``rest``."""

    def __init__(self, rest: Any, snapshot: Any) -> None:
        self.rest = rest
        self.result: Any = None  # an EstimateResult; None until done, or when cancelled
        self.error: BaseException | None = None  # what compute raised (walking the peaks)
        self.thread: int | None = None  # the thread that ran it (what tests read)
        self._snapshot = snapshot
        self._cancelled = threading.Event()
        self._done = threading.Event()

    def start(self) -> None:
        """Queue the job for the worker (starting it if none runs); returns at once."""
        global _thread, _pending, _started
        nogc.hold()  # released by the worker inside its own pause: its wake-up allocates
        with _cond:
            _queue.append(self)
            _pending += 1
            _started += 1
            if _thread is None or not _thread.is_alive():
                _thread = threading.Thread(target=_serve, name="revstudio-estimate", daemon=True)
                _thread.start()
            _cond.notify()

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
        global _pending
        with nogc.paused():
            nogc.release()  # (the hold taken when it was submitted)
            self.thread = threading.get_ident()
            try:
                if not self._cancelled.is_set():
                    interval = sys.getswitchinterval()
                    if SWITCH_S is not None and SWITCH_S < interval:
                        sys.setswitchinterval(SWITCH_S)
                    try:
                        self.result = self.rest.compute(self._snapshot, cancelled=self._cancelled.is_set)
                    finally:
                        sys.setswitchinterval(interval)
            except BaseException as exc:  # handed to the UI thread, which reports it as an inline failure
                self.error = exc  # (a plugin's sys.exit() too: the worker thread lives on)
            finally:
                self._snapshot = None
                with _cond:
                    _pending -= 1
                self._done.set()


def _serve() -> None:
    while True:
        with _cond:
            while not _queue:
                _cond.wait()
            job = _queue.popleft()
        job._run()


def busy() -> bool:
    """Whether a job of any document is queued or under way (what tests wait for before reading
    the figures a view shows; a document applies a finished job's result at its next poll)."""
    with _cond:
        return _pending > 0


def started() -> int:
    """How many jobs all documents have submitted so far."""
    with _cond:
        return _started
