"""Benchmark: what the memory estimate after an edit costs the UI thread, inline versus on its worker.

A shown main window (offscreen) holds a generated 1,007-node project (``large_graph(1000)``).
Each edit sets the training batch size to a value not used before (so the analysis memo never
has its figures) and is checked at once; its estimate (phase two, after the edit's first paint)
is then made either inline on the UI thread (``inline``: the document's walk timer runs
``finish_estimate()``, the behaviour before the worker) or on the worker thread (``worker``: the
document as it is, the GIL's switch interval lowered to ``estimate_worker.SWITCH_S`` while the job
runs; ``worker, 5 ms switch``: CPython's default interval kept). The three alternate edit by edit
in one run, so load on the machine hits them alike.

Per edit, from the moment phase two starts on the UI thread until ``estimateChanged`` has been
handled by every view:
- ``stall``: the longest the event loop went without running a 5 ms QTimer on the UI thread
  (what typing, a drag or a zoom waits for at worst; the GIL still switches every 5 ms);
- ``ui cpu``: the UI thread's CPU time (``time.thread_time``: the graph copy, the polls, applying
  the result and the views' updates; inline, the whole estimate);
- ``other cpu``: the process's CPU time on other threads (the worker's estimate);
- ``figures``: wall time until the memory figures were shown;
- ``repaint``: one full repaint of the canvas (``viewport().repaint()``, what a zoom step or a
  drag frame costs), timed 20 ms into phase two (inline: once the estimate is done, which is when
  the event loop can run it), against the same repaint with nothing running (``idle``).

Usage: python benchmarks/bench_estimate_thread.py [--edits 8] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication, QStandardPaths, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from revstudio.core.commands import SetTraining  # noqa: E402
from revstudio.core.generate import large_graph  # noqa: E402
from revstudio.qt import estimate_worker  # noqa: E402
from revstudio.qt.document import Document  # noqa: E402

TICK_MS = 5


class Probe:
    """Ticks of a 5 ms timer and the moments phase two starts and ends."""

    def __init__(self, doc: Document, view: Any) -> None:
        self.doc, self.view = doc, view
        self.ticks: list[float] = []
        self.started: float | None = None
        self.ended: float | None = None
        self.ui_cpu0 = self.cpu0 = 0.0
        self.repaint_ms: float | None = None
        self.timer = QTimer()
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self.timer.start()
        doc.estimateChanged.connect(self._ended)
        real = doc._walk_after_paint
        self.inline = False

        def walk_after_paint() -> None:  # what the document's zero-time timer runs after the paint
            self.started = time.perf_counter()
            self.ui_cpu0, self.cpu0 = time.thread_time(), time.process_time()
            if self.inline:
                doc.finish_estimate()  # the behaviour before the worker: the estimate made here
            else:
                real()

        doc._walk_timer.timeout.disconnect()
        doc._walk_timer.timeout.connect(walk_after_paint)

    def _tick(self) -> None:
        now = time.perf_counter()
        self.ticks.append(now)
        if self.started is not None and self.repaint_ms is None and now - self.started >= 0.020:
            self.repaint_ms = repaint(self.view)

    def _ended(self) -> None:
        if self.started is not None and self.ended is None:
            QTimer.singleShot(0, self._after_views)  # (after every view's estimateChanged slot)

    def _after_views(self) -> None:
        self.ended = time.perf_counter()
        self.ui_cpu1, self.cpu1 = time.thread_time(), time.process_time()

    def edit(self, doc: Document, batch: int, inline: bool) -> dict[str, float]:
        self.inline, self.started, self.ended, self.repaint_ms = inline, None, None, None
        doc.push(SetTraining(doc.graph, {**doc.graph.training, "batch_size": batch}))
        doc.break_merge()
        doc._timer.start(0)  # checked at once (a keystroke's would wait for the typing to pause)
        deadline = time.perf_counter() + 30
        while (self.ended is None or (self.repaint_ms is None and inline is False)) and time.perf_counter() < deadline:
            QCoreApplication.processEvents()
            time.sleep(0.0005)
        assert self.started is not None and self.ended is not None, "the estimate never came"
        window = [t for t in self.ticks if self.started <= t <= self.ended]
        points = [self.started, *window, self.ended]
        stall = max(b - a for a, b in zip(points, points[1:], strict=False))
        ui = self.ui_cpu1 - self.ui_cpu0
        if self.repaint_ms is None:  # inline: the loop ran no tick before the estimate was done
            self.repaint_ms = repaint(self.view)
        return {"stall": stall * 1000, "ui cpu": ui * 1000, "other cpu": (self.cpu1 - self.cpu0 - ui) * 1000,
                "figures": (self.ended - self.started) * 1000, "repaint": self.repaint_ms}


def repaint(view: Any) -> float:
    t = time.perf_counter()
    view.viewport().repaint()
    return (time.perf_counter() - t) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=8, help="edits per mode (alternating)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    app = QApplication.instance() or QApplication(sys.argv)
    QStandardPaths.setTestModeEnabled(True)
    from revstudio.qt.autosave import RecoveryStore
    from revstudio.qt.main_window import MainWindow
    from revstudio.qt.settings import Settings

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_editor_actions import QuietDialogs

    with tempfile.TemporaryDirectory() as folder:
        doc = Document(large_graph(1000))
        window = MainWindow(doc, Settings(), QuietDialogs(), RecoveryStore(Path(folder) / "recovery"))
        window.resize(1280, 800)
        window.show()
        for _ in range(5):
            app.processEvents()
        view = window.current_view()
        nodes = len(doc.graph.nodes) + sum(len(b.nodes) for b in doc.graph.groups.values())
        probe = Probe(doc, view)
        idle = [repaint(view) for _ in range(5)]
        switch = estimate_worker.SWITCH_S
        modes = {"inline": switch, "worker, 5 ms switch": None, "worker": switch}
        rows: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
        batch = 40
        for _ in range(args.edits):
            for mode, interval in modes.items():
                batch += 1
                estimate_worker.SWITCH_S = interval
                rows[mode].append(probe.edit(doc, batch, mode == "inline"))
        estimate_worker.SWITCH_S = switch
        window.close()
    keys = ["stall", "ui cpu", "other cpu", "figures", "repaint"]
    med = {mode: {k: statistics.median(r[k] for r in rs) for k in keys} for mode, rs in rows.items()}
    worst = {mode: {k: max(r[k] for r in rs) for k in keys} for mode, rs in rows.items()}
    if args.json:
        print(json.dumps({"nodes": nodes, "idle_repaint_ms": statistics.median(idle), "median": med, "max": worst}))
        return
    print(f"{nodes} nodes, {args.edits} edits per mode, alternating; ms, median (max); idle repaint "
          f"{statistics.median(idle):.1f} ms")
    print("| estimate | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    for mode in rows:
        print(f"| {mode} | " + " | ".join(f"{med[mode][k]:.0f} ({worst[mode][k]:.0f})" for k in keys) + " |")


if __name__ == "__main__":
    main()
