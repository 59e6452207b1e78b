"""The Runs tab's several-run detail made off the UI thread: the selection answers at once.

Comparing the selected runs reads each one's ``metrics.jsonl`` (whether their loss rows are the same)
and its small JSON files (what differs): ten 200,000-row runs held the window for tens of seconds at
every selection change. :class:`DetailComparer` shows the part it knows without reading a file (how
many runs, the best loss: the table's figures) with "comparing…" at once, and hands the rest to
:class:`CompareJob`, run by one daemon thread; the rows it reads are kept
(:mod:`revstudio.training.loss_rows`), so the next selection reads only what is new.

A job reads the run folders and its own copies of the entries' metrics, writes nothing but its result
and touches no Qt object, with the cyclic collector paused (``core.nogc``: a collection started there
would finalise the UI thread's Qt objects on the wrong thread), as the editor's estimate worker does.
The UI thread polls it (no signal crosses threads) and shows a result only when it is the newest
request's: one made for a selection that has since changed is dropped, and a queued one is skipped.
"""
from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from revstudio.core import nogc
from revstudio.qt.runs.compare_runs import several_runs_text, summary_lines
from revstudio.qt.runs.run_dirs import RunEntry

POLL_MS = 20
COMPARING = "comparing their settings, environment and loss rows…"

_cond = threading.Condition()
_queue: collections.deque[CompareJob] = collections.deque()
_thread: threading.Thread | None = None


class CompareJob:
    """``several_runs_text`` of ``entries`` on the worker thread."""

    def __init__(self, entries: Sequence[RunEntry], metrics: Sequence[dict[str, Any]],
                 setting_text: Callable[[str, Any], str]) -> None:
        self.entries = list(entries)
        self.metrics = [dict(m) for m in metrics]
        self.setting_text = setting_text
        self.text: str | None = None
        self.error: BaseException | None = None
        self.thread: int | None = None  # the thread that ran it (what tests read)
        self._cancelled = threading.Event()
        self._done = threading.Event()

    def start(self) -> None:
        global _thread
        nogc.hold()  # released by the worker inside its own pause: its wake-up allocates
        with _cond:
            _queue.append(self)
            if _thread is None or not _thread.is_alive():
                _thread = threading.Thread(target=_serve, name="revstudio-runs-compare", daemon=True)
                _thread.start()
            _cond.notify()

    def cancel(self) -> None:
        self._cancelled.set()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def _run(self) -> None:
        with nogc.paused():
            nogc.release()  # (the hold taken when it was submitted)
            self.thread = threading.get_ident()
            try:
                if not self._cancelled.is_set():
                    self.text = several_runs_text(self.entries, self.metrics, self.setting_text)
            except Exception as exc:  # shown in the detail in words, never a traceback
                self.error = exc
            finally:
                self._done.set()


def _serve() -> None:
    while True:
        with _cond:
            while not _queue:
                _cond.wait()
            job = _queue.popleft()
        job._run()


class DetailComparer(QObject):
    """One panel's comparisons: :meth:`request` one, ``ready(text)`` once the newest is made."""

    ready = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.job: CompareJob | None = None
        self.key: tuple[str, ...] | None = None  # the runs of the last request (shown or under way)
        self.shown = False  # whether the detail shows ``key``'s comparison (not its placeholder)
        self._poll = QTimer(self)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self._check)

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
        self._poll.start()
        if keep:
            return None
        return "\n".join([*summary_lines(entries, metrics), "", COMPARING])

    def cancel(self) -> None:
        """No comparison is wanted (the selection is no longer several runs): any under way is dropped."""
        if self.job is not None:
            self.job.cancel()
        self.job, self.key, self.shown = None, None, False
        self._poll.stop()

    def busy(self) -> bool:
        """Whether a comparison is under way whose text is not shown yet (what tests wait for)."""
        return self.job is not None

    def _check(self) -> None:
        job = self.job
        if job is None or not job.done():
            return
        self.job = None
        self._poll.stop()
        self.shown = True
        if job.error is not None:
            self.ready.emit(f"{len(job.entries)} runs selected: they could not be compared ({job.error}); "
                            "select them again to retry, or compare them with revstudio runs RUN... --compare.")
        else:
            self.ready.emit(job.text or "")
