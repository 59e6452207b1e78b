"""Overlaid long runs in the Plots tab: what a redraw and a hover cost with several runs shown.

bench_plots.py streams one run; a TensorBoard/W&B user compares several. Here N runs of S steps
(loss every step, validation every 100) are filed (the cost of a row, smoothing included), smoothed
again as when the slider moves, overlaid in the Loss plot and its curves redrawn (a forced
refresh: every curve handed its points again, the legend's line-style key kept up to date), then
the mouse is moved across the plot (the hover line, a dot per curve and the box of values).
CPU time of this process (``time.thread_time``), so a busy machine's waits do not count; paints
are not timed here (bench_plots.py times them). Last, one run of S steps is filed with the rows
the worker writes (loss, accuracy, learning rate and throughput every step, memory every 100,
validation every 100) and the memory it holds afterwards is measured (tracemalloc: numpy's
buffers and Python's objects), with the curves it keeps.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_plot_overlay.py [--runs 4] [--steps 100000]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _run(name: str, steps: int, rate: float, filed: list[float]):  # type: ignore[no-untyped-def]
    from revstudio.qt.plots.rows import RunData

    run = RunData(name, weight=0.6)
    run.feed({"kind": "event", "event": "started", "time": 0.0, "total_steps": steps, "task": "classification",
              "config": {"log_every": 1, "val_every": 100}})
    t0 = time.thread_time()
    for s in range(1, steps + 1):
        run.feed({"kind": "step", "step": s, "epoch": s / 500, "time": s * 0.01,
                  "loss": 2.3 * math.exp(-s * rate) + 0.05 + 0.1 * ((s * 7919) % 13) / 13})
        if s % 100 == 0:
            run.feed({"kind": "val", "step": s, "epoch": s / 500, "time": s * 0.01,
                      "val_loss": 2.5 * math.exp(-s * rate) + 0.08})
    filed.append((time.thread_time() - t0) * 1e6 / (steps * 1.01))  # us per row (rows built and filed)
    return run


def _held(steps: int) -> tuple[int, list[str]]:
    """Bytes one run of ``steps`` worker rows holds once filed, and the curves it keeps."""
    import gc
    import tracemalloc

    from revstudio.qt.plots.rows import RunData

    gc.collect()
    tracemalloc.start()
    run = RunData("held", weight=0.6)
    run.feed({"kind": "event", "event": "started", "time": 0.0, "total_steps": steps, "task": "classification",
              "estimate_bytes": 1 << 20, "standard_estimate_bytes": 1 << 21,
              "config": {"log_every": 1, "val_every": 100, "memory_every": 100}})
    for s in range(1, steps + 1):  # what training/loop.py writes for a classifier
        row = {"kind": "step", "step": s, "epoch": s / 500, "time": s * 0.01, "loss": 2.3 / (1 + s * 1e-3),
               "accuracy": min(0.99, s * 1e-4), "lr": 0.01 * (1 - s / (steps + 1)), "samples_per_s": 512.0}
        if s % 100 == 0:
            row.update(peak_bytes=900_000 + s % 7, estimate_bytes=1 << 20)
        run.feed(row)
        if s % 100 == 0:
            run.feed({"kind": "val", "step": s, "epoch": s / 500, "time": s * 0.01, "val_loss": 2.5 / (1 + s * 1e-3),
                      "val_accuracy": min(0.98, s * 1e-4)})
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return held, sorted(run.series)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QPointF, QSettings
    from PySide6.QtWidgets import QApplication

    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, tempfile.mkdtemp())  # not the user's
    app = QApplication.instance() or QApplication(sys.argv)
    from revstudio.qt.plots.panel import PlotsPanel

    filed: list[float] = []
    runs = [_run(f"run-{i}", args.steps, 3.0 / args.steps * (1 + i), filed) for i in range(args.runs)]
    slider = []
    for k in range(6):  # the smoothing slider moved: every kept point of every run smoothed again
        t0 = time.thread_time()
        for run in runs:
            run.set_weight(0.9 if k % 2 else 0.6)
        slider.append((time.thread_time() - t0) * 1000)
    panel = PlotsPanel()
    panel.resize(1400, 700)
    panel.show()
    panel.set_runs(runs)
    app.processEvents()
    plot = panel.loss
    shown = [(r, panel.colours[r.name]) for r in runs]
    redraw = []
    for _ in range(args.repeats):
        t0 = time.thread_time()
        plot.refresh(shown, "step", panel.weight if _ % 2 else panel.weight + 0.01)  # a new weight: every curve
        redraw.append((time.thread_time() - t0) * 1000)
    vb = plot.plot.getPlotItem().getViewBox()
    hover = []
    has_hover = hasattr(plot, "hover")
    for k in range(args.repeats):
        x = args.steps * (k + 0.5) / args.repeats
        pos = vb.mapViewToScene(QPointF(x, 1.0))
        t0 = time.thread_time()
        plot._hover(pos)  # what a mouse move runs: the read-out, and (this tree) the line, dots and box
        hover.append((time.thread_time() - t0) * 1000)
    print(f"{args.runs} runs x {args.steps:,} steps overlaid in the Loss plot "
          f"({2 * args.runs} curves; hover marks: {'yes' if has_hover else 'no'})")
    print("| measure | median | max |")
    print("|---|---|---|")
    print(f"| redraw of the Loss plot (refresh, CPU) | {statistics.median(redraw):.2f} ms | {max(redraw):.2f} ms |")
    print(f"| one mouse move over it (CPU) | {statistics.median(hover):.2f} ms | {max(hover):.2f} ms |")
    print(f"| smoothing slider moved: every run smoothed again (CPU) | {statistics.median(slider):.1f} ms "
          f"| {max(slider):.1f} ms |")
    print(f"| a row built and filed (loss every step, val every 100; CPU) | {statistics.median(filed):.1f} us "
          f"| {max(filed):.1f} us |")
    panel.close()
    held, kept = _held(args.steps)
    print(f"| memory one run of {args.steps:,} worker rows holds (tracemalloc) | {held / 2**20:.1f} MiB | |")
    print(f"curves kept: {', '.join(kept)}")


if __name__ == "__main__":
    main()
