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
Usage: python benchmarks/bench_editor_actions.py [--sizes 100 300 1000] [--json] [--profile "rename 1 node"]
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

from PySide6.QtCore import QCoreApplication, QStandardPaths  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

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


def settle() -> None:
    for _ in range(3):
        QCoreApplication.processEvents()


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall ms, CPU ms) of ``fn`` and the event-loop turns it causes."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    settle()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


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


def run_size(n: int, folder: Path) -> tuple[int, dict[str, tuple[float, float]], dict[str, int | None]]:
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
    work: dict[str, int | None] = {}

    def edit(label: str, fn: Callable[[], object]) -> None:
        out[label] = timed(profiled(label, fn))
        work[label] = inferred(doc)

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
    conv = next(k for k, v in doc.graph.nodes.items() if v.type == "Conv")
    view.select_nodes([conv])
    settle()

    def edit_and_recheck() -> None:
        doc.push(SetParam(doc.graph, conv, "kernel_size", 5))
        doc.current_report()  # a keystroke's re-check may wait for a pause: count it here

    edit("param edit + re-check", edit_and_recheck)
    relu = next(k for k, v in doc.graph.nodes.items() if v.type == "Activation")
    edit("param edit, same shapes", lambda: (doc.push(SetParam(doc.graph, relu, "fn", "tanh")),
                                                         doc.current_report()))
    edit("width edit (mismatch)", lambda: (doc.push(SetParam(doc.graph, conv, "out_channels", 3)),
                                                       doc.current_report()))
    edit("undo width edit", stack.undo)
    wire = next(e for e in doc.graph.edges if e.dst.node == relu)
    edit("unwire 1", lambda: doc.push(Disconnect(doc.graph, wire)))
    edit("rewire 1", lambda: doc.push(Connect(doc.graph, wire.src, wire.dst)))
    edit("delete 1 node", lambda: doc.push(remove_nodes(doc.graph, [relu])))
    edit("undo delete 1", stack.undo)
    edit("rename 1 node", lambda: doc.push(RenameNode(doc.graph, relu, f"{relu}_r")))
    out["find popup"] = timed(view.open_find)
    stack.setClean()
    w.close()
    settle()
    w.deleteLater()
    settle()
    return nodes, out, work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", nargs="+", default=[], metavar="LABEL",
                        help='single edits to run under cProfile, by their row label ("rename 1 node")')
    args = parser.parse_args()
    PROFILED.update(args.profile)
    app = QApplication.instance() or QApplication(sys.argv)
    QStandardPaths.setTestModeEnabled(True)  # no real settings, recent files or recovery files
    results: dict[int, dict[str, tuple[float, float]]] = {}
    work: dict[int, dict[str, int | None]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            nodes, out, work[nodes] = run_size(n, Path(tmp))
            results[nodes] = out
    del app
    if args.json:
        print(json.dumps({str(k): {"ms": v, "inferred": work[k]} for k, v in results.items()}, indent=1))
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


if __name__ == "__main__":
    main()
