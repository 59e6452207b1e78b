"""The Runs tab's several-run detail made off the UI thread: the selection answers at once.

Comparing the selected runs reads each one's ``metrics.jsonl`` (whether their loss rows are the same)
and its small JSON files (what differs): ten 200,000-row runs held the window for tens of seconds at
every selection change. :class:`DetailComparer` shows the part it knows without reading a file (how
many runs, the best loss: the table's figures) with "comparing…" at once, and hands the rest to
:class:`CompareJob`, run by one daemon thread; the rows it reads are kept
(:mod:`revstudio.training.loss_rows`), so the next selection reads only what is new.

A job reads the run folders and its own copies of the entries' metrics, writes nothing but its result
and touches no Qt object; it is a :class:`~revstudio.qt.worker_thread.Job` of its own
:class:`~revstudio.qt.worker_thread.Worker` (the collector paused while it computes), as the editor's
estimate is. The UI thread polls it (a :class:`~revstudio.qt.worker_thread.Delivery`: no signal crosses
threads) and shows a result only when it is the newest request's: one made for a selection that has
since changed is dropped, and a queued one is skipped.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QObject, Signal

from revstudio.qt.runs.compare_runs import several_runs_text, summary_lines
from revstudio.qt.runs.run_dirs import RunEntry
from revstudio.qt.worker_thread import Delivery, Job, Worker

POLL_MS = 20
COMPARING = "comparing their settings, environment and loss rows…"

WORKER = Worker("revstudio-runs-compare")


class CompareJob(Job):
    """``several_runs_text`` of ``entries`` on the worker thread."""

    worker = WORKER

    def __init__(self, entries: Sequence[RunEntry], metrics: Sequence[dict[str, Any]],
                 setting_text: Callable[[str, Any], str]) -> None:
        super().__init__()
        self.entries = list(entries)
        self.metrics = [dict(m) for m in metrics]
        self.setting_text = setting_text
        self.text: str | None = None

    def compute(self) -> None:  # (an exception: shown in the detail in words, never a traceback)
        self.text = several_runs_text(self.entries, self.metrics, self.setting_text)


class DetailComparer(QObject):
    """One panel's comparisons: :meth:`request` one, ``ready(text)`` once the newest is made."""

    ready = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.job: CompareJob | None = None
        self.key: tuple[str, ...] | None = None  # the runs of the last request (shown or under way)
        self.shown = False  # whether the detail shows ``key``'s comparison (not its placeholder)
        self._delivery = Delivery(POLL_MS, self._done, self)

    def request(self, entries: Sequence[RunEntry], metrics: Sequence[dict[str, Any]],
                setting_text: Callable[[str, Any], str]) -> str | None:
        """Start comparing ``entries``; returns the text to show meanwhile, or None where the detail
        already shows these runs' comparison (a running run's refresh: no flicker while it is remade)."""
        key = tuple(str(e.path) for e in entries)
        keep = key == self.key and self.shown
        self.cancel()
        self.key, self.shown = key, keep
        self.job = CompareJob(entries, metrics, setting_text)
        self.job.start()
        self._delivery.watch(self.job)
        if keep:
            return None
        return "\n".join([*summary_lines(entries, metrics), "", COMPARING])

    def cancel(self) -> None:
        """No comparison is wanted (the selection is no longer several runs): any under way is dropped."""
        self._delivery.drop()
        self.job, self.key, self.shown = None, None, False

    def busy(self) -> bool:
        """Whether a comparison is under way whose text is not shown yet (what tests wait for)."""
        return self.job is not None

    def _done(self, job: CompareJob) -> None:
        self.job = None
        self.shown = True
        if job.error is not None:
            self.ready.emit(f"{len(job.entries)} runs selected: they could not be compared ({job.error}); "
                            "select them again to retry, or compare them with revstudio runs RUN... --compare.")
        else:
            self.ready.emit(job.text or "")
