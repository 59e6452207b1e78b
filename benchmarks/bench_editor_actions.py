"""Benchmark: what a user waits for after each editor action on a 100-, 300- and 1,000-node project.

A shown main window (offscreen) opens a generated project (``large_graph(n)``: lanes of
hand-wired RevNet blocks) and goes through the actions of someone editing a big graph: open,
fit, save, autosave (all on the UI thread, and the UI thread's part of the one after a pause), select all, copy, paste of every node, its undo and redo, delete of 200
nodes and its undo, align / distribute of 200 nodes, auto layout and its undo, a parameter
edit (the re-check that follows it included) and the find popup; then single edits (a param
that keeps shapes, a width that breaks a merge and its undo, a wire off and on, a delete of
one node and its undo, a rename), with the nodes each one's re-check inferred. Each action is timed from
the call to the end of the event-loop turns it causes (re-check, canvas, inspector, tabs):
wall time, with the process's CPU time beside it (the machines are shared). ``--profile LABEL ...``
runs those single edits under cProfile (CPU figures then include its overhead) and prints each
one's functions by cumulative time.

For the single edits it also prints when the edit's first paint came (the window's first
repaint after the edit's analysis: cards, wires, problems), when the canvas was first painted after
the analysis (a window repaint may leave it for the next one), against when everything it causes
was done (the memory figures' walked peaks shown), CPU ms from the call. ``--edits-only`` skips
the other actions (open, then the single edits): run it several times, alternating with the
tree before, and take medians.
Usage: python benchmarks/bench_editor_actions.py [--sizes 100 300 1000] [--json] [--profile "rename 1 node"]
       python benchmarks/bench_editor_actions.py --sizes 1000 --edits-only --json
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QStandardPaths  # noqa: E402
from PySide6.QtWidgets import QApplication, QMainWindow  # noqa: E402

from revstudio.core.commands import Connect, Disconnect, RenameNode, SetParam, remove_nodes  # noqa: E402
from revstudio.core.generate import large_graph  # noqa: E402
from revstudio.core.project_write import save  # noqa: E402


class QuietDialogs:
    """Answers every question the window may ask without showing anything."""

    def ask_unsaved(self, parent: Any, name: str) -> str:
        return "discard"

    def error(self, parent: Any, title: str, text: str) -> None:
        print(f"error dialog: {title}: {text}", file=sys.stderr)

    def info(self, parent: Any, title: str, text: str) -> None:
        pass

    def confirm(self, parent: Any, title: str, text: str) -> bool:
        return False

    def ask_stop_run(self, parent: Any, detail: str) -> bool:
        return True

    def open_path(self, parent: Any, start: str) -> str | None:
        return None

    def save_path(self, parent: Any, start: str) -> str | None:
        return None

    def ask_restore(self, parent: Any, description: str) -> str:
        return "later"


REPAINT_S = 0.03  # how long an action's last updates are given to be painted (wall time, sleeping)


def settle() -> None:
    for _ in range(3):
        QCoreApplication.processEvents()
    # A tree whose estimate runs on a worker thread: the action is done once its figures are shown
    # (the document applies the worker's result at its next poll).
    windows = [probe.window for probe in PAINTER]
    deadline = time.perf_counter() + 60
    while any(getattr(w.document, "estimate_pending", False) for w in windows) and time.perf_counter() < deadline:
        QCoreApplication.processEvents()
        time.sleep(0.0005)
    # ... and painted: the figures' repaint (the region badges relabelled) is a window update the
    # platform sends a few ms later; left pending, the next action's first paint painted it
    # (a lane's badge band, ~10 ms at 1,007 nodes, counted in the edit after an unwire or delete)
    end = time.perf_counter() + REPAINT_S
    while time.perf_counter() < end:
        QCoreApplication.processEvents()
        time.sleep(0.0005)


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall ms, CPU ms) of ``fn`` and the event-loop turns it causes."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    settle()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


class FirstPaint(QObject):
    """The (wall, CPU) time at the end of the window's first repaint after the document's next
    analysis (``arm``): what the user first sees of an edit. ``walks``: the document's peak walks
    done by then (a tree with two phases walks after it; a tree without counts none)."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__()
        self.window = window
        self.armed = self.waiting = self.canvas_armed = False
        self.at: tuple[float, float] | None = None
        # the end of the canvas's first paint after the analysis: a window repaint may leave the
        # canvas out (a param edit's card is repainted one update later), so "first paint" alone
        # compares edits that redraw the canvas in it with edits that do not
        self.canvas_at: tuple[float, float] | None = None
        self.walks: int | None = None
        window.document.analysisChanged.connect(self._analysed)
        window.installEventFilter(self)
        self.view = window.current_view()
        self.view.viewport().installEventFilter(self)

    def arm(self) -> None:
        self.waiting, self.armed, self.at, self.walks = True, False, None, None
        self.canvas_armed, self.canvas_at = False, None

    def _analysed(self) -> None:
        if self.waiting:
            self.waiting, self.armed, self.canvas_armed = False, True, True

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if self.canvas_armed and obj is self.view.viewport() and event.type() == QEvent.Type.Paint:
            self.canvas_armed = False
            self.view.viewportEvent(event)  # the canvas's paint itself, timed to its end
            self.canvas_at = (time.perf_counter(), time.process_time())
            return True
        if self.armed and obj is self.window and event.type() == QEvent.Type.UpdateRequest:
            self.armed = False
            QMainWindow.event(self.window, event)  # the repaint itself, timed to its end
            self.at = (time.perf_counter(), time.process_time())
            self.walks = getattr(self.window.document, "walks", None)
            return True
        return False


# edit -> (first paint CPU ms, all done CPU ms, wall, walks, canvas painted CPU ms)
PAINT: dict[str, tuple[float, float, float, int | None, float]] = {}
PAINTER: list[FirstPaint] = []


def painted(label: str, fn: Callable[[], object]) -> tuple[float, float]:
    """``timed``, and when the edit's first repaint came (``PAINT[label]``)."""
    probe = PAINTER[0]
    walks = getattr(probe.window.document, "walks", None)
    probe.arm()
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    settle()
    done_wall, done_cpu = time.perf_counter(), time.process_time()
    if probe.at is None:  # no repaint after the analysis (an edit whose analysis waits): nothing to say
        first = ((done_cpu - cpu) * 1000, (done_wall - wall) * 1000)
    else:
        first = ((probe.at[1] - cpu) * 1000, (probe.at[0] - wall) * 1000)
    before = None if walks is None or probe.walks is None else probe.walks - walks
    canvas = (done_cpu - cpu) * 1000 if probe.canvas_at is None else (probe.canvas_at[1] - cpu) * 1000
    PAINT[label] = (first[0], (done_cpu - cpu) * 1000, first[1], before, canvas)
    return (done_wall - wall) * 1000, (done_cpu - cpu) * 1000


PROFILED: set[str] = set()  # ``--profile``: the edits run under cProfile
TOP = 30


def profiled(label: str, fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` under cProfile where ``label`` is asked for (printed once it and its event-loop
    turns have run, by cumulative time)."""
    if label not in PROFILED:
        return fn

    def run() -> None:
        prof = cProfile.Profile()
        prof.enable()
        fn()
        settle()
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(TOP)
        print(f"==== {label} (cProfile, cumulative)\n{out.getvalue()}", file=sys.stderr)

    return run


def inferred(doc: Any) -> int | None:
    """Nodes the last re-check inferred (None: a tree without the incremental check)."""
    inc = getattr(doc, "incremental", None)
    return None if inc is None else inc.inferred


def after_typing(doc: Any) -> None:
    """A keystroke's re-check waits for a pause in the typing: let the pause be over (the check
    then runs from the event loop, as any other edit's)."""
    timer = getattr(doc, "_timer", None)
    if timer is not None and timer.isActive():
        timer.start(0)


def run_size(n: int, folder: Path, edits_only: bool = False
             ) -> tuple[int, dict[str, tuple[float, float]], dict[str, int | None]]:
    from revstudio.qt.autosave import RecoveryStore
    from revstudio.qt.document import Document
    from revstudio.qt.main_window import MainWindow
    from revstudio.qt.settings import Settings

    path = folder / f"large{n}.revs"
    save(large_graph(n), path)
    w = MainWindow(Document(), Settings(), QuietDialogs(), RecoveryStore(folder / f"recovery{n}"))
    w.resize(1280, 800)
    w.show()
    settle()
    out: dict[str, tuple[float, float]] = {}
    out["open"] = timed(lambda: w.files.load_path(str(path)))
    view, stack, doc = w.current_view(), w.document.undo_stack, w.document
    nodes = len(doc.graph.nodes)
    PAINTER[:] = [FirstPaint(w)]
    work: dict[str, int | None] = {}

    def edit(label: str, fn: Callable[[], object]) -> None:
        out[label] = painted(label, profiled(label, fn))
        work[label] = inferred(doc)

    if edits_only:
        view.fit_all()
        settle()
        single_edits(doc, view, stack, edit)
        return nodes, out, work
    out["fit"] = timed(view.fit_all)
    out["save"] = timed(lambda: w.files.write(str(folder / f"saved{n}.revs")))
    doc.mark_dirty()
    out["autosave"] = timed(w.autosaver.save_now)  # text and files on this thread (a crash, SIGTERM)
    # after an edit's pause: the UI thread only copies the graph; the writer thread does the rest
    out["autosave (UI thread)"] = timed(w.autosaver.flush)
    w.autosaver.wait()
    out["select all"] = timed(w.select_all)
    out["copy"] = timed(view.copy)
    view.select_nodes([])
    settle()
    edit("paste all", view.paste)
    out["undo paste"] = timed(stack.undo)
    out["redo paste"] = timed(stack.redo)
    stack.undo()
    settle()
    ids = list(doc.graph.nodes)[:200]
    view.select_nodes(ids)
    settle()
    out["delete 200"] = timed(view.delete_selection)
    out["undo delete"] = timed(stack.undo)
    view.select_nodes(ids)
    settle()
    out["align 200"] = timed(lambda: view.align("left"))
    out["distribute 200"] = timed(lambda: view.distribute("horizontal"))
    out["auto layout"] = timed(view.auto_layout)
    out["undo layout"] = timed(stack.undo)
    single_edits(doc, view, stack, edit)
    out["find popup"] = timed(view.open_find)
    stack.setClean()
    w.close()
    settle()
    w.deleteLater()
    settle()
    return nodes, out, work


def single_edits(doc: Any, view: Any, stack: Any, edit: Callable[[str, Callable[[], object]], None]) -> None:
    conv = next(k for k, v in doc.graph.nodes.items() if v.type == "Conv")
    view.select_nodes([conv])
    settle()
    # a keystroke's re-check waits for a pause in the typing: the pause is taken as over
    edit("param edit + re-check", lambda: (doc.push(SetParam(doc.graph, conv, "kernel_size", 5)), after_typing(doc)))
    relu = next(k for k, v in doc.graph.nodes.items() if v.type == "Activation")
    edit("param edit, same shapes", lambda: (doc.push(SetParam(doc.graph, relu, "fn", "tanh")), after_typing(doc)))
    edit("width edit (mismatch)", lambda: (doc.push(SetParam(doc.graph, conv, "out_channels", 3)), after_typing(doc)))
    edit("undo width edit", stack.undo)
    wire = next(e for e in doc.graph.edges if e.dst.node == relu)
    edit("unwire 1", lambda: doc.push(Disconnect(doc.graph, wire)))
    edit("rewire 1", lambda: doc.push(Connect(doc.graph, wire.src, wire.dst)))
    edit("delete 1 node", lambda: doc.push(remove_nodes(doc.graph, [relu])))
    edit("undo delete 1", stack.undo)
    edit("rename 1 node", lambda: doc.push(RenameNode(doc.graph, relu, f"{relu}_r")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--edits-only", action="store_true", help="open, then the single edits only")
    parser.add_argument("--profile", nargs="+", default=[], metavar="LABEL",
                        help='single edits to run under cProfile, by their row label ("rename 1 node")')
    args = parser.parse_args()
    PROFILED.update(args.profile)
    app = QApplication.instance() or QApplication(sys.argv)
    QStandardPaths.setTestModeEnabled(True)  # no real settings, recent files or recovery files
    results: dict[int, dict[str, tuple[float, float]]] = {}
    work: dict[int, dict[str, int | None]] = {}
    paints: dict[int, dict[str, tuple[float, float, float, int | None, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            PAINT.clear()
            nodes, out, work[nodes] = run_size(n, Path(tmp), args.edits_only)
            results[nodes] = out
            paints[nodes] = dict(PAINT)
    del app
    if args.json:
        print(json.dumps({str(k): {"ms": v, "inferred": work[k], "first_paint": paints[k]}
                          for k, v in results.items()}, indent=1))
        return
    sizes = list(results)
    print("wall ms (CPU ms)".ljust(24) + "".join(f"{n:>22} nodes" for n in sizes))
    for action in next(iter(results.values())):
        cells = "".join(f"{results[n][action][0]:>16.0f} ({results[n][action][1]:>5.0f})" for n in sizes)
        print(f"{action:<24}{cells}")
    print("\nnodes re-inferred by the edit's re-check (-: the full check, every node)")
    for action in next(iter(work.values())):
        cells = "".join(f"{'-' if work[n][action] is None else work[n][action]:>28}" for n in sizes)
        print(f"{action:<24}{cells}")
    print("\nsingle edits, CPU ms from the call: first paint of the edit / the canvas's first paint after "
          "its analysis / everything shown (memory figures included);\nw: peak walks before the first "
          "paint (-: a tree without the two phases)")
    for action in next(iter(paints.values())):
        cells = "".join(f"{paints[n][action][0]:>12.0f} / {paints[n][action][4]:>5.0f} / {paints[n][action][1]:>5.0f} w"
                        f"{'-' if paints[n][action][3] is None else paints[n][action][3]}" for n in sizes)
        print(f"{action:<24}{cells}")


if __name__ == "__main__":
    main()
