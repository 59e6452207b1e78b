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
the first job (and again if it ever ended): a :class:`~revstudio.qt.worker_thread.Worker`, whose
jobs compute only while the cyclic collector is paused (``qt.worker_thread`` says why), as the
Runs tab's comparison worker does.

The estimate is pure Python, so the UI thread still needs the GIL for every slot and paint it
runs meanwhile; CPython hands the GIL to a waiting thread only after the switch interval (5 ms
by default), paid again for each call from Qt into Python. While a job computes, the interval
is :data:`SWITCH_S` (``benchmarks/bench_estimate_thread.py`` measures both).
"""
from __future__ import annotations

import sys
from typing import Any

from revstudio.qt.worker_thread import Job, Worker

SWITCH_S: float | None = 0.001  # the GIL switch interval while a job computes (None: left as it is)

WORKER = Worker("revstudio-estimate")


class EstimateJob(Job):
    """One estimate of ``snapshot`` (a graph copy nobody else holds) with ``rest``."""

    worker = WORKER

    def __init__(self, rest: Any, snapshot: Any) -> None:
        super().__init__()
        self.rest = rest
        self.result: Any = None  # an EstimateResult; None until done, or when cancelled
        self._snapshot = snapshot

    def compute(self) -> None:
        interval = sys.getswitchinterval()
        if SWITCH_S is not None and SWITCH_S < interval:
            sys.setswitchinterval(SWITCH_S)
        try:
            self.result = self.rest.compute(self._snapshot, cancelled=self.cancelled)
        finally:
            sys.setswitchinterval(interval)

    def let_go(self) -> None:
        self._snapshot = None


def busy() -> bool:
    """Whether a job of any document is queued or under way (what tests wait for before reading
    the figures a view shows; a document applies a finished job's result at its next poll)."""
    return WORKER.busy()


def started() -> int:
    """How many jobs all documents have submitted so far."""
    return WORKER.started()
