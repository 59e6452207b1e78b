"""Benchmark: how long the Code tab takes to show an edit, on every example project.

Opens each example in a live ``CodeView``, waits for its first export, then
changes one parameter and times the wait until the new code is shown (debounce
plus the export in the worker process plus the swap-in). Target: < 0.5 s.
Usage: python benchmarks/bench_code_view.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication  # noqa: E402

from revstudio.core.commands import Move  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.qt.code_view import CodeView  # noqa: E402
from revstudio.qt.document import Document  # noqa: E402


def _wait(view: CodeView, count: int, limit: float = 120.0) -> None:
    deadline = time.perf_counter() + limit
    while view.generation <= count and time.perf_counter() < deadline:
        QApplication.processEvents()
        time.sleep(0.002)


def measure(path: Path, repeat: int) -> tuple[float, int]:
    doc = Document(load(str(path)))
    view = CodeView(doc)
    view.generation = 0
    view.regenerated.connect(lambda: setattr(view, "generation", view.generation + 1))
    view.resize(900, 500)
    view.show()
    _wait(view, 0)
    times = []
    for i in range(repeat):
        # an edit that changes the code: rename the graph (the docstring follows)
        seen = view.generation
        t = time.perf_counter()
        doc.graph.name = f"{path.stem}-{i}"
        doc.push(Move(doc.graph, {next(iter(doc.graph.nodes)): (i * 10.0, 0.0)}))
        doc.schedule_recompute()
        _wait(view, seen)
        times.append(time.perf_counter() - t)
    lines = view.text().count("\n")
    view.close()
    doc.undo_stack.clear()
    return statistics.median(times), lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    print(f"{'example':<20} {'lines':>6} {'edit -> code shown':>20}   target < 500 ms")
    for path in sorted((ROOT / "resources" / "examples").glob("*.revs")):
        seconds, lines = measure(path, args.repeat)
        print(f"{path.stem:<20} {lines:>6} {seconds * 1e3:17.0f} ms")
    del app
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
