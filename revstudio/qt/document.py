"""The open document: one project graph, its one undo stack, its derived analysis.

Every user edit is a core ``Command`` pushed through :meth:`Document.push`,
which wraps it in a ``QUndoCommand`` on the document's single ``QUndoStack``.
After each edit the derived analysis (shapes, diagnostics, regions, memory
estimate) is recomputed once, coalesced on the event loop (on a big graph, typing's
keystrokes wait for a pause), and announced with ``analysisChanged``. It comes in two
phases: the memory estimate and its simulated peaks (60-70 % of an edit's check at 1,000
nodes) are made after the event loop has painted the edit, on a worker thread from a copy of the
graph (``estimate_worker``), and announced with ``estimateChanged``; a new edit drops those not
yet made or applied. Views observe the graph's events; they never keep a second copy of the truth.
"""
from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from revstudio.core.check import IncrementalCheck
from revstudio.core.commands import Command
from revstudio.core.graph import Graph
from revstudio.qt.estimate_worker import EstimateJob

log = logging.getLogger("revstudio")

# Typing into a field pushes an edit per keystroke. On a graph this big the re-check costs
# 0.3-1 s, so it waits for a pause in the typing (one re-check for "128", not three stalls).
TYPING_NODES = 200  # nodes, group bodies included
TYPING_MS = 300
# A view keeps showing the figures of the state before an edit while its estimate is made;
# past this wait it marks them as not current (greyed): a shorter wait would flicker.
WAITING_MS = 150
# How often the UI thread looks whether the estimate's worker is done (no signal crosses threads).
POLL_MS = 5

DiskStamp = tuple[int, int, int]


def disk_stamp(path: str | None) -> DiskStamp | None:
    """What the file at ``path`` is now (modified time, size, inode); None if it is not there."""
    if not path:
        return None
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def disk_digest(path: str | None) -> str | None:
    """A digest of the file's bytes: a file touched or rewritten with the same text is not a change."""
    if not path:
        return None
    try:
        with open(path, "rb") as handle:
            digest = hashlib.sha256()
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    except (OSError, ValueError):
        return None


def _new_memo() -> Any:
    try:
        from revstudio.diagnostics.check_memo import AnalysisMemo
    except ImportError:  # a build without the backend: nothing to remember
        return None
    return AnalysisMemo()


def _without_blank_page(diagnostics: list[Any]) -> list[Any]:
    """The report's diagnostics less "the graph is empty" (which ``check`` and the API say): a new
    project's canvas says how to begin with its hint, and its Problems tab and status bar stay clear."""
    from revstudio.core.shapes import EMPTY_GRAPH

    return [d for d in diagnostics if not (d.node is None and d.message == EMPTY_GRAPH)]


class _QtCommand(QUndoCommand):
    """Adapts a pure-Python core command to ``QUndoStack``."""

    _ids: dict[Any, int] = {}

    def __init__(self, cmd: Command, session: int = 0, document: Document | None = None) -> None:
        super().__init__(cmd.text)
        self.cmd = cmd
        self.document = document
        # Merging is limited to one editing session (one focus of one field), so
        # typing "128" is one undo step but two separate visits stay two steps.
        self.session = session

    def redo(self) -> None:
        # QUndoStack.push calls redo(); the command applies itself there.
        doc = self.document
        if doc is None or doc._pushing:
            self.cmd.do()
            return
        doc.replaying = True  # a redo (not the first do): views select what it brings back
        try:
            self.cmd.do()
        finally:
            doc.replaying = False

    def undo(self) -> None:
        doc = self.document
        if doc is None:
            self.cmd.undo()
            return
        doc.replaying = True
        try:
            self.cmd.undo()
        finally:
            doc.replaying = False

    def id(self) -> int:
        key = self.cmd.merge_id()
        if key is None:
            return -1
        return self._ids.setdefault(key, len(self._ids) + 1)

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 - Qt API
        merged = isinstance(other, _QtCommand) and other.session == self.session and self.cmd.merge(other.cmd)
        if merged and self.cmd.is_noop():
            self.setObsolete(True)  # back where it started: the stack drops the step (and the "*")
        return merged


class Document(QObject):
    """A project graph + path + undo stack + derived analysis."""

    analysisChanged = Signal()      # the derived report was recomputed
    pathChanged = Signal(str)
    dirtyChanged = Signal(bool)
    graphReplaced = Signal()        # a new graph object (new/open/restore)
    stepped = Signal(str)           # after undo/redo: what was undone or redone, for the status bar
    edited = Signal()               # the undo stack changed: an edit (a merged keystroke too), undo, redo
    # The report's memory figures are complete (the estimate made, its peaks walked): after every
    # analysisChanged, at once when nothing is left to make, else after the edit's first paint.
    estimateChanged = Signal()
    # The report's estimate has been pending for WAITING_MS: the memory figures views show are
    # of an earlier state (they grey them until estimateChanged).
    estimateWaiting = Signal()

    def __init__(self, graph: Graph | None = None, path: str | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.graph = graph if graph is not None else Graph()
        self.path = path
        # The file as this document last read or wrote it: another program's change shows as a
        # different stamp, so Save can ask before overwriting it.
        self.disk: DiskStamp | None = disk_stamp(path)
        self.digest = disk_digest(path) if self.disk else None
        self.undo_stack = QUndoStack(self)
        # A bound method, not a lambda: Qt drops the connection when the document dies.
        self.undo_stack.cleanChanged.connect(self._on_clean_changed)
        self.undo_stack.indexChanged.connect(self._on_index_changed)
        self.replaying = False  # True while undo/redo replays commands (views select what comes back)
        self.bringing_back = False  # True while a view selects what an undo/redo brought back
        self._pushing = False
        self._index = 0
        self.report: Any = None
        self.analysis_error: str | None = None
        self._session = 0
        self._moving = False
        # Shape inference kept between edits: an edit re-infers only the nodes it can affect.
        self.incremental = IncrementalCheck()
        # Regions and memory estimate of the last few graph states: undo and redo reuse them.
        self.memo: Any = _new_memo()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.recompute)
        # Phase two: the estimate and its peaks, made once the edit has been painted.
        self.estimate_pending = False
        self._rest: Callable[[], None] | None = None  # phase two of the last check, not run yet
        self.walks = 0  # estimates (peaks walked) the editor made in phase two (what tests count)
        self._job: EstimateJob | None = None  # phase two of the state checked last, on the worker
        self._poll_timer = QTimer(self)
        self._poll_timer.setInterval(POLL_MS)
        self._poll_timer.timeout.connect(self._poll)
        self._walk_timer = QTimer(self)
        self._walk_timer.setSingleShot(True)
        self._walk_timer.setInterval(0)
        self._walk_timer.timeout.connect(self._walk_after_paint)
        self._waiting_timer = QTimer(self)
        self._waiting_timer.setSingleShot(True)
        self._waiting_timer.setInterval(WAITING_MS)
        self._waiting_timer.timeout.connect(self._on_waiting)
        self.estimate_overdue = False  # pending past WAITING_MS: views grey the figures they keep
        self._watch(self.graph)
        self.recompute()
        self.finish_estimate()  # a new document's figures are complete from the start (no edit to paint first)

    def _on_clean_changed(self, clean: bool) -> None:
        self.dirtyChanged.emit(not clean)

    # ---- editing -----------------------------------------------------
    def push(self, cmd: Command) -> None:
        """Apply an edit as one undoable step (merging with the previous one if allowed)."""
        # a keystroke: re-check after the typing; any other edit: at once (a pending keystroke's too)
        self._timer.setInterval(TYPING_MS if cmd.merge_id() is not None and self._big() else 0)
        self._pushing = True
        try:
            self.undo_stack.push(_QtCommand(cmd, self._session, self))
        finally:
            self._pushing = False
        self._index = self.undo_stack.index()

    def _on_index_changed(self, index: int) -> None:
        old, self._index = self._index, index
        self.edited.emit()
        if self._pushing or index == old:
            return
        stack = self.undo_stack
        if index < old:
            text = f"Undid {stack.text(index)}" if old - index == 1 else \
                f"Undid {old - index} edits (back to before {stack.text(index)})"
        else:
            text = f"Redid {stack.text(old)}" if index - old == 1 else f"Redid {index - old} edits"
        self.stepped.emit(text)

    def break_merge(self) -> None:
        """End the current editing session: the next edit starts a new undo step."""
        self._session += 1

    def _watch(self, graph: Graph) -> None:
        graph.node_moved.sub(self._on_moved)
        graph.changed.sub(self._on_changed)
        graph.group_changed.sub(self._on_group_changed)
        for body in graph.groups.values():
            body.changed.sub(self.schedule_recompute)

    def _on_group_changed(self, name: str, old: Graph | None, new: Graph | None) -> None:
        if old is not None:
            old.changed.unsub(self.schedule_recompute)
        if new is not None:
            new.changed.sub(self.schedule_recompute)

    def _on_moved(self, *_args: object) -> None:
        self._moving = True

    def _on_changed(self) -> None:
        # A move changes no shape, diagnostic or estimate: re-checking a 1,000-node
        # graph after every drag or layout would cost half a second for nothing.
        if self._moving:
            self._moving = False
            return
        self.schedule_recompute()

    def schedule_recompute(self) -> None:
        self._timer.start()
        self._walk_timer.stop()  # the walk pending is of a state that is gone: the next check's replaces it
        # the memory figures shown are of the state before this edit from now on (a keystroke's
        # check waits for the typing to pause): past WAITING_MS the views grey them
        self._start_waiting()

    def _start_waiting(self) -> None:
        if not self._waiting_timer.isActive() and not self.estimate_overdue:
            self._waiting_timer.start()

    def _big(self) -> bool:
        g = self.graph
        return len(g.nodes) + sum(len(body.nodes) for body in g.groups.values()) >= TYPING_NODES

    def current_report(self) -> Any:
        """The report of the graph as it is now, complete: an edit's pending recompute and the
        walk of its estimate's peaks are done first."""
        if self._timer.isActive():
            self.recompute()
        self.finish_estimate()
        return self.report

    def recheck_pending(self) -> bool:
        """An edit (an undo, a redo) is made and its re-check runs at the event loop's next turn
        (not a keystroke's, which waits for a pause in the typing)."""
        return self._timer.isActive() and self._timer.interval() == 0

    def recompute(self) -> None:
        """Recompute shapes, diagnostics and regions (phase one, announced with
        ``analysisChanged``); the memory estimate and its peaks follow after the event loop
        has painted, or on demand (``finish_estimate``)."""
        self._timer.stop()
        self._timer.setInterval(0)  # the next edit that is not a keystroke is re-checked at once
        self._walk_timer.stop()
        self._rest = None  # (a walk not run yet is of a state that is gone)
        self._drop_job()
        inc = self.incremental
        check: Callable[[Graph], tuple[Any, Callable[[], None] | None]]
        try:
            from revstudio.diagnostics.check import check_in_two

            def check(graph: Graph) -> tuple[Any, Callable[[], None] | None]:
                return check_in_two(graph, incremental=inc, memo=self.memo)
        except ImportError:  # a build without the backend: shapes and diagnostics only
            def check(graph: Graph) -> tuple[Any, Callable[[], None] | None]:
                return inc.check(graph), None
        try:
            self.report, self._rest = check(self.graph)
            self.report.diagnostics = _without_blank_page(self.report.diagnostics)
            self.analysis_error = None
        except Exception as exc:  # a bug in a pass must not take the editor down
            log.exception("analysis failed")
            self.analysis_error = f"analysis failed: {type(exc).__name__}: {exc}"
        self.estimate_pending = self._rest is not None
        if self.estimate_pending:
            self._walk_timer.start()
            self._start_waiting()  # (running since the edit, when it scheduled this check)
        self.analysisChanged.emit()
        if not self.estimate_pending:
            self._estimate_done()

    def _walk_after_paint(self) -> None:
        # A zero-time timer started by the check: the views' updates it caused are posted
        # events (the scene's, then the repaint), which the loop delivers first; a view that
        # reads the figures in between has them made at once instead (``finish_estimate``).
        # The estimate is made on a worker thread from a copy of the graph as checked.
        rest, self._rest = self._rest, None
        if rest is None:
            return
        self._job = EstimateJob(rest, self.graph.copy())
        self._job.start()
        self._poll_timer.start()

    def _poll(self) -> None:
        if self._job is None:
            self._poll_timer.stop()
        elif self._job.done():
            self._apply_job()

    def _drop_job(self) -> None:
        """The job in flight is of a state that is gone: its result is never applied."""
        self._poll_timer.stop()
        job, self._job = self._job, None
        if job is not None:
            job.cancel()

    def shutdown(self) -> None:
        """The window closes: no estimate is made or applied any more (a job under way stops at
        its next step; it touches no Qt object)."""
        self._timer.stop()
        self._walk_timer.stop()
        self._waiting_timer.stop()
        self._rest = None
        self._drop_job()

    def finish_estimate(self) -> None:
        """Make the pending memory estimate and walk its peaks now (phase two), or wait for its
        worker to finish it, and announce ``estimateChanged``; nothing when none is pending. An
        edit not yet re-checked is re-checked first: the estimate must be of the state checked."""
        if self._timer.isActive():
            self.recompute()
        self._walk_timer.stop()
        if self._job is not None:
            self._job.wait()
            self._apply_job()
            return
        rest, self._rest = self._rest, None
        if rest is None:
            return
        problems = len(getattr(self.report, "diagnostics", ()))
        try:
            rest()
            self.walks += 1
        except Exception as exc:  # the estimate is advice: a failed walk must not take the editor down
            self._estimate_failed(exc)
        self._estimate_made(problems)

    def _apply_job(self) -> None:
        """The worker's estimate, of the state checked last (a later edit drops the job first)."""
        job, self._job = self._job, None
        self._poll_timer.stop()
        if job is None:
            return
        problems = len(getattr(self.report, "diagnostics", ()))
        if job.error is not None:
            self._estimate_failed(job.error)
        elif job.result is not None:
            job.rest.apply(job.result)
            self.walks += 1
        self._estimate_made(problems)

    def _estimate_failed(self, exc: BaseException) -> None:
        log.error("memory estimate failed", exc_info=exc)
        self.analysis_error = f"the memory estimate failed: {type(exc).__name__}: {exc}"
        self.report.estimate = None

    def _estimate_made(self, problems: int) -> None:
        if len(getattr(self.report, "diagnostics", ())) != problems or self.analysis_error:
            self.estimate_pending = False
            self.analysisChanged.emit()  # (the estimate failed: Problems says so)
        self._estimate_done()

    def _on_waiting(self) -> None:
        self.estimate_overdue = True
        self.estimateWaiting.emit()

    def _estimate_done(self) -> None:
        self.estimate_pending = self.estimate_overdue = False
        self._waiting_timer.stop()
        self.estimateChanged.emit()

    # ---- whole-document changes ------------------------------------
    def replace_graph(self, graph: Graph, path: str | None = None) -> None:
        """New/open/restore: a fresh graph and an empty undo stack."""
        self.graph.node_moved.unsub(self._on_moved)
        self.graph.changed.unsub(self._on_changed)
        self.graph.group_changed.unsub(self._on_group_changed)
        for body in self.graph.groups.values():
            body.changed.unsub(self.schedule_recompute)
        self.graph = graph
        self.incremental = IncrementalCheck()  # nothing kept from the last project's graphs
        self.memo = _new_memo()
        self.path = path
        self.disk, self.digest = disk_stamp(path), disk_digest(path)
        self._index = 0  # emptying the stack is no undo: nothing to say ("Undid 3 edits")
        self.undo_stack.clear()
        self._watch(graph)
        self.graphReplaced.emit()
        self.pathChanged.emit(path or "")
        self.recompute()
        self.finish_estimate()  # an opened project shows its figures complete: only edits paint first

    def rebase_training(self, rebase: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Re-express the run settings held by every step of the undo stack (undone ones too) with
        ``rebase``, as Save As to another folder re-expresses the graph's: an undo then brings back
        the old data path relative to the new file, not to a folder the project has left."""
        for i in range(self.undo_stack.count()):
            step = self.undo_stack.command(i)
            if isinstance(step, _QtCommand):
                step.cmd.rebase_training(rebase)

    def is_dirty(self) -> bool:
        return not self.undo_stack.isClean()

    def mark_dirty(self) -> None:
        """The document holds edits that are on no disk (e.g. restored from recovery)."""
        self.undo_stack.resetClean()
        self.dirtyChanged.emit(True)

    def disk_state(self) -> str | None:
        """'changed' or 'deleted' when the file on disk is no longer the one this document
        read or wrote (another program or window), else None."""
        if self.disk is None:
            return None
        now = disk_stamp(self.path)
        if now is None:
            return "deleted"
        if now != self.disk and self.digest is not None and disk_digest(self.path) == self.digest:
            self.disk = now  # touched, or rewritten with the very same bytes: nothing to say
        return None if now == self.disk else "changed"

    def remember_disk(self, stamp: DiskStamp | None) -> None:
        """The file as these edits knew it (a restored recovery file): any change since is one."""
        self.disk, self.digest = stamp, None

    def mark_saved(self, path: str) -> None:
        self.path = path
        self.disk, self.digest = disk_stamp(path), disk_digest(path)
        self.undo_stack.setClean()
        self.pathChanged.emit(path)
