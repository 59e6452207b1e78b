"""Benchmark: what the canvas overview costs on a 100-, 300- and 1,000-node project.

A shown canvas (offscreen, 1600x1000) on ``large_graph(n)``: the map's redraw (once after an
edit, a burst of edits redraws once), the check the view makes on each paint (``follow_view``),
and a pan frame (scroll 20 px, repaint the viewport and the overview) with the overview on and
off. CPU ms of the process (medians), since the machines are shared.
Usage: python benchmarks/bench_overview.py [--sizes 100 300 1000] [--repeat 30]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication  # noqa: E402

from revstudio.core.generate import large_graph  # noqa: E402


def _ms(action: Callable[[], object], repeat: int) -> float:
    """Median CPU ms of the process per call (the machines are shared: wall time wanders)."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        action()
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times)


def bench(n: int, repeat: int) -> dict[str, float]:
    from revstudio.qt.canvas import GraphView
    from revstudio.qt.document import Document

    view = GraphView(Document(large_graph(n)))
    view.resize(1600, 1000)
    view.show()
    QApplication.processEvents()
    view.restore_view_state({})
    QApplication.processEvents()
    overview = view.overview
    bar = view.horizontalScrollBar()
    step = [20]

    def pan() -> None:
        if bar.value() + step[0] > bar.maximum() or bar.value() + step[0] < bar.minimum():
            step[0] = -step[0]
        bar.setValue(bar.value() + step[0])
        view.viewport().repaint()
        QApplication.processEvents()  # the overview's own repaint (its rectangle moved)

    follow = _ms(lambda: [overview.follow_view() for _ in range(1000)], 3)  # 1000 calls: ms -> us each
    row = {"nodes": float(len(view.graph.nodes)),
           "redraw_ms": _ms(overview.redraw, repeat),
           "follow_view_us": follow,
           "pan_frame_on_ms": _ms(pan, repeat)}
    overview.set_wanted(False)
    row["pan_frame_off_ms"] = _ms(pan, repeat)
    view.close()
    view.deleteLater()
    QApplication.processEvents()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    print(f"{'nodes':>6} {'redraw ms':>10} {'follow_view us':>15} {'pan frame on ms':>16} {'off ms':>8}")
    for n in args.sizes:
        r = bench(n, args.repeat)
        print(f"{r['nodes']:>6.0f} {r['redraw_ms']:>10.2f} {r['follow_view_us']:>15.1f} "
              f"{r['pan_frame_on_ms']:>16.2f} {r['pan_frame_off_ms']:>8.2f}")
    del app


if __name__ == "__main__":
    main()
