"""Live plots under a 100,000-step run: redraw per frame, event-loop stalls, cost of the rows.

A synthetic run of N steps (every series of CONTRACTS section 3: step rows
with loss, accuracy, lr, samples/s and measured peak; validation and gradient
check rows of two regions every 100 steps) is streamed as JSON lines into the
Plots tab at full speed: each turn of the event loop the GUI reads one 64 KiB
chunk, as it does from the worker's pipe, splits and files its rows, while the
panel's 20 Hz timer redraws. Measured:

- redraw per frame: ``PlotsPanel.refresh`` + the paint events that follow
  it (timed in ``QApplication.notify``), during streaming and at the end
  with N points in every curve;
- the longest stall of the event loop: the largest gap between ticks of a
  1 ms timer while streaming and redrawing;
- rows: the cost of splitting and filing one step row, against the time of a
  training step of the example projects (their median step time measured by
  ``revstudio train --json`` logging every step).

Targets: redraw < 20 ms per frame at 100,000 points per series, no stall over
50 ms, rows < 2 % of a training step.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_plots.py
    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_plots.py --quick   # smoke run (10,000 steps)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CHUNK = 64 * 1024
EXAMPLES = ("revnet_coupling", "glow_flow", "two_branch")


def synthetic_rows(steps: int) -> bytes:
    rows = [{"kind": "event", "event": "started", "time": 0.0, "mode": "reversible", "total_steps": steps,
             "estimate_bytes": 3_000_000, "standard_estimate_bytes": 10_000_000, "regions": ["r0", "r1"],
             "config": {"precision": "fp32", "log_every": 1}}]  # (as a run logging every step says)
    for s in range(1, steps + 1):
        t = s * 0.01
        rows.append({"kind": "step", "step": s, "epoch": round(s / 500, 4), "time": round(t, 4),
                     "loss": 2.3 * math.exp(-s / 30000) + 0.05 * math.sin(s / 7), "lr": 0.001,
                     "samples_per_s": 800.0 + 40 * math.sin(s / 50), "accuracy": min(1.0, s / steps),
                     "peak_bytes": 2_900_000 + (s % 13) * 1000, "estimate_bytes": 3_000_000})
        if s % 100 == 0:
            rows.append({"kind": "val", "step": s, "epoch": s / 500, "time": t, "val_loss": 2.0 * math.exp(-s / 30000),
                         "val_accuracy": min(1.0, s / steps)})
            rows.append({"kind": "gradcheck", "step": s, "epoch": s / 500, "time": t,
                         "regions": [{"region": r, "grad_rel_error": 1e-7 * (1 + (s % 7)), "inversion_error": 1e-9}
                                     for r in ("r0", "r1")], "max_grad_rel_error": 7e-7, "max_inversion_error": 1e-9})
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def row_cost_us(data: bytes, repeat: int = 3) -> tuple[float, float]:
    """Microseconds (wall, CPU) to split and file one row (best of ``repeat`` passes over all rows)."""
    from revstudio.qt.plots.rows import LineSplitter, RunData

    n = data.count(b"\n")
    best, best_cpu = math.inf, math.inf
    for _ in range(repeat):
        run, split = RunData("cost"), LineSplitter()
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(0, len(data), CHUNK):
            run.feed_lines(split.feed(data[i:i + CHUNK]))
        best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, time.process_time() - c0)
    return best / n * 1e6, best_cpu / n * 1e6


TRACE: list[tuple[float, float, str]] | None = None  # --trace: (start, seconds, what) of each slow piece


def _timing_app() -> Any:
    """A QApplication that times the delivery of every paint event (where pyqtgraph draws).

    With ``--trace`` it also records every event delivery over 1 ms (its type
    and receiver), so the longest stalls can be taken apart afterwards.
    """
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    class TimingApp(QApplication):
        paint_wall = 0.0
        paint_cpu = 0.0
        depth = 0
        painted: set[str] = set()  # the plots (object names) that got a paint event

        def notify(self, receiver: Any, event: Any) -> bool:  # noqa: N802 - Qt API
            paint = event.type() == QEvent.Type.Paint
            if not paint and TRACE is None:
                return super().notify(receiver, event)
            kind = event.type()
            t0, c0 = time.perf_counter(), time.process_time()
            TimingApp.depth += 1
            try:
                return super().notify(receiver, event)
            finally:
                TimingApp.depth -= 1
                took = time.perf_counter() - t0
                if paint:
                    TimingApp.painted.add(_where(receiver))
                    TimingApp.paint_wall += took
                    TimingApp.paint_cpu += time.process_time() - c0
                if TRACE is not None and took > 1e-3 and TimingApp.depth <= 2:
                    name = getattr(kind, "name", str(kind))
                    who = type(receiver).__name__ + _where(receiver)
                    TRACE.append((t0, took, "  " * TimingApp.depth + f"{name} -> {who}"))

    return QApplication.instance() or TimingApp([])


def _where(obj: Any) -> str:
    """'(plot_loss)': the nearest named object at or above ``obj`` (a viewport names its plot)."""
    for _ in range(4):
        name = obj.objectName() if hasattr(obj, "objectName") else ""
        if name:
            return f"({name})"
        obj = obj.parent() if hasattr(obj, "parent") and callable(obj.parent) else None
        if obj is None:
            break
    return ""


def _span(what: str, fn: Any) -> Any:
    """``fn`` with its calls recorded in TRACE (when tracing)."""
    def timed(*args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            if TRACE is not None:
                TRACE.append((t0, time.perf_counter() - t0, what))
    return timed


PARTS: dict[str, list[float]] = {}  # --breakdown: CPU seconds per piece of the drawing, summed over the run


def time_parts() -> None:
    """Wrap the pieces of a frame (setData, the y framing, the reference lines, each plot's paint) in timers."""
    import pyqtgraph as pg

    from revstudio.qt.plots import metric_plot
    from revstudio.qt.plots.series import Series

    def wrap(owner: Any, name: str, label: str) -> None:
        fn = getattr(owner, name)

        def timed(*args: Any, **kw: Any) -> Any:
            c0 = time.thread_time()
            try:
                return fn(*args, **kw)
            finally:
                PARTS.setdefault(label, []).append(time.thread_time() - c0)
        setattr(owner, name, timed)

    wrap(metric_plot.MetricPlot, "_set_data", "MetricPlot._set_data (all of a curve's update)")
    wrap(Series, "view", "  Series.view (block overview)")
    wrap(pg.PlotDataItem, "setData", "  PlotDataItem.setData (pyqtgraph: clip, downsample, bounds)")
    wrap(metric_plot, "_bounds", "  _bounds (y extent of the drawn points)")
    wrap(metric_plot.MetricPlot, "_follow_y", "MetricPlot._follow_y (y framing)")
    wrap(metric_plot.MetricPlot, "_plan_x", "MetricPlot._plan_x")
    wrap(pg.PlotCurveItem, "paint", "paint: PlotCurveItem.paint")
    wrap(pg.AxisItem, "paint", "paint: AxisItem.paint")
    wrap(pg.GraphicsView, "paintEvent", "paint: GraphicsView.paintEvent (a whole plot)")


def parts_table(frames: int) -> list[str]:
    lines = ["| piece | calls | CPU per frame | per call |", "|---|---|---|---|"]
    for label, times in PARTS.items():
        lines.append(f"| {label} | {len(times):,} | {1000 * sum(times) / max(frames, 1):.2f} ms | "
                     f"{1e6 * sum(times) / max(len(times), 1):.0f} us |")
    return lines


def stall_anatomy(gaps: list[tuple[float, float]], top: int = 6) -> list[str]:
    """For the ``top`` longest gaps (start, end in perf_counter seconds): what ran inside them."""
    lines = []
    for start, end in sorted(gaps, key=lambda g: g[0] - g[1])[:top]:
        inside = [(t, d, w) for t, d, w in TRACE or [] if t < end and t + d > start]
        lines.append(f"gap {1000 * (end - start):.1f} ms:")
        for t, d, w in sorted(inside):
            lines.append(f"    +{1000 * (t - start):6.1f} ms  {1000 * d:6.1f} ms  {w}")
    return lines


def stream(steps: int, data: bytes) -> dict[str, float]:
    from PySide6.QtCore import QElapsedTimer, QTimer

    from revstudio.qt.plots.panel import PlotsPanel
    from revstudio.qt.plots.rows import LineSplitter, RunData

    try:
        from revstudio.qt.plots.rows import LinePump
    except ImportError:  # an older revstudio (run for a before/after): rows filed a whole chunk per turn
        LinePump = None  # noqa: N806
    app = _timing_app()
    cls = type(app)
    panel = PlotsPanel()
    panel.resize(1400, 620)
    panel.show()
    run, split = RunData("bench"), LineSplitter()
    warm = RunData("warm-up")  # the Plots tab's first paint (pyqtgraph's lazy imports), timed on its own
    warm.feed_lines(split.feed(data[:CHUNK]))
    t0 = time.perf_counter()
    panel.set_runs([warm])
    for _ in range(3):
        app.processEvents()
    first_paint = (time.perf_counter() - t0) * 1000
    split = LineSplitter()
    pump = LinePump(run) if LinePump is not None else None  # as the run controller files rows
    panel.set_runs([run])
    frames: list[float] = []
    frames_cpu: list[float] = []
    gaps: list[float] = []
    clock = QElapsedTimer()
    clock.start()
    last = [clock.nsecsElapsed()]
    pos = [0]

    pending = [0.0, 0.0]  # the last refresh, waiting for the paints it causes

    @_span_if_tracing("frame: panel.refresh")
    def frame() -> None:  # the panel's own timer: a frame = refresh + the paints that follow it
        if pending[0]:
            frames.append((pending[0] + cls.paint_wall) * 1000)
            frames_cpu.append((pending[1] + cls.paint_cpu) * 1000)
        cls.paint_wall = cls.paint_cpu = 0.0
        t0, c0 = time.perf_counter(), time.process_time()
        redrawn = panel.refresh()
        pending[:] = [time.perf_counter() - t0, time.process_time() - c0] if redrawn else [0.0, 0.0]

    marks: list[tuple[float, float]] = []

    def tick() -> None:
        now = clock.nsecsElapsed()
        gaps.append((now - last[0]) / 1e6)
        if TRACE is not None and gaps[-1] > 30:
            end = time.perf_counter()
            marks.append((end - gaps[-1] / 1000, end))
        last[0] = now

    ended = [0.0]
    final: list[float] = []
    final_cpu: list[float] = []
    seen: list[int] = []
    names = {f"({plot.objectName()})" for plot in panel.plots}
    static = {"t": 0.0, "c": 0.0, "waits": 0}

    def static_frame() -> None:
        """Every curve full, handed to setData again, timed with the paints it causes.

        Inside the event loop: once ``exec`` has returned Qt delivers no more paint
        events, which is why this row once measured ``refresh`` alone.
        """
        if static["t"]:  # the last refresh: wait for every plot's paint
            static["waits"] += 1
            if not names <= cls.painted and static["waits"] < 50:
                return
            final.append((static["t"] + cls.paint_wall) * 1000)
            final_cpu.append((static["c"] + cls.paint_cpu) * 1000)
            seen.append(len(names & cls.painted))
            if len(final) == 15:
                app.quit()
                return
        run.version += 1
        for series in run.series.values():
            series.version += 1
        cls.paint_wall = cls.paint_cpu = 0.0
        cls.painted = set()
        t1, c1 = time.perf_counter(), time.process_time()
        panel.refresh(force=True)
        static.update(t=time.perf_counter() - t1, c=time.process_time() - c1, waits=0)

    @_span_if_tracing("feed: read a chunk, file rows for a few ms")
    def feed() -> None:  # the worker's pipe: a chunk each turn while fewer than a chunk's rows wait
        i = pos[0]
        if pump is None:  # the old controller: split and file all of a chunk at once
            if i < len(data):
                run.feed_lines(split.feed(data[i:i + CHUNK]))
                pos[0] = i + CHUNK
                return
        if i >= len(data) and not (pump is not None and len(pump)):
            if not ended[0]:  # streaming is over: the static frames follow, timed on their own
                ended[0] = time.perf_counter()
                if pending[0]:  # the last streaming refresh's paints have run by now: count that frame
                    frames.append((pending[0] + cls.paint_wall) * 1000)
                    frames_cpu.append((pending[1] + cls.paint_cpu) * 1000)
                    pending[:] = [0.0, 0.0]
                heartbeat.stop()
                panel.timer.stop()
                feeder.timeout.disconnect()
                feeder.timeout.connect(static_frame)
            return
        if pump is None:
            return
        if i < len(data) and len(pump) < 400:
            pump.push(split.feed(data[i:i + CHUNK]))
            pos[0] = i + CHUNK
        pump.pump()

    redraws = {plot.title_text: 0 for plot in panel.plots}  # how often each plot was brought up to date

    def counted(plot: Any) -> Any:
        inner = plot.refresh

        def refresh(*args: Any, **kw: Any) -> Any:
            if not ended[0]:  # while streaming: the static frames after it are timed on their own
                redraws[plot.title_text] += 1
            return inner(*args, **kw)
        return refresh
    for plot in panel.plots:
        plot.refresh = counted(plot)
    panel.timer.timeout.disconnect()
    panel.timer.timeout.connect(frame)
    heartbeat = QTimer()
    heartbeat.setInterval(1)
    heartbeat.timeout.connect(tick)
    heartbeat.start()
    feeder = QTimer()
    feeder.setInterval(0)
    feeder.timeout.connect(feed)
    feeder.start()
    t0 = time.perf_counter()
    app.exec()
    wall = ended[0] - t0
    rates = {name: count / wall for name, count in redraws.items()}
    feeder.stop()
    points = max(panel.loss.curve_points().values())
    panel.close()
    if not frames:  # a fast machine can stream a short run within one tick of the panel's timer
        print(f"note: all {steps:,} steps streamed before the plots' timer drew a frame; "
              "run more steps (--steps) for streaming frame times", file=sys.stderr)
    return {"wall_s": wall, "rows_per_s": data.count(b"\n") / wall, "frames": len(frames),
            "frame_median_ms": _median(frames), "frame_max_ms": max(frames, default=math.nan),
            "frame_p95_ms": sorted(frames)[int(0.95 * (len(frames) - 1))] if frames else math.nan,
            "full_median_ms": _median(final), "full_max_ms": max(final, default=math.nan),
            "frame_cpu_median_ms": _median(frames_cpu), "full_cpu_median_ms": _median(final_cpu),
            "first_paint_ms": first_paint,
            "stall_max_ms": max(gaps[1:]) if len(gaps) > 1 else 0.0, "points": points,
            "stall_p99_ms": sorted(gaps[1:])[int(0.99 * (len(gaps) - 2))] if len(gaps) > 2 else 0.0,
            "stalls_over_50": sum(g > 50 for g in gaps[1:]), "marks": marks,
            "rate_min": min(rates.values()), "rate_max": max(rates.values()),
            "static_painted": min(seen, default=0), "plots": len(names)}


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else math.nan


def _span_if_tracing(what: str) -> Any:
    return lambda fn: _span(what, fn)


def step_time_ms(example: str, steps: int) -> float:
    """Median time of a training step of an example, from ``revstudio train --json`` logging every step."""
    out = Path(tempfile.mkdtemp(prefix="bench-plots-"))
    argv = [sys.executable, "-P", "-m", "revstudio", "train", str(ROOT / "resources" / "examples" / f"{example}.revs"),
            "--json", "--out", str(out / "run"), "--steps", str(steps), "--log-every", "1", "--val-every", "0",
            "--gradcheck-every", "0", "--memory-every", "0", "--checkpoint-every", "0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, cwd=out)
    times = [r["time"] for r in map(json.loads, (ln for ln in proc.stdout.splitlines() if ln.startswith("{")))
             if r.get("kind") == "step"]
    diffs = [b - a for a, b in zip(times[1:], times[2:])]  # the first step warms up
    if not diffs:
        raise SystemExit(f"revstudio train {example} gave no step rows: {proc.stderr[-800:]}")
    return statistics.median(diffs) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="10,000 steps and one example (smoke test)")
    parser.add_argument("--no-examples", action="store_true", help="step time of one example only")
    parser.add_argument("--trace", action="store_true",
                        help="take the longest event-loop stalls apart (what ran inside each)")
    parser.add_argument("--breakdown", action="store_true",
                        help="CPU time per piece of a frame (setData, y framing, paints), per streaming frame")
    parser.add_argument("--cprofile", metavar="N", type=int, default=0,
                        help="print the N functions with the most own time while streaming (cProfile)")
    args = parser.parse_args()
    steps = min(args.steps, 10_000) if args.quick else args.steps
    data = synthetic_rows(steps)
    global TRACE
    if args.trace:
        TRACE = []
    if args.breakdown:
        time_parts()
    if args.cprofile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        s = prof.runcall(stream, steps, data)
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.cprofile)
    else:
        s = stream(steps, data)
    if args.trace:
        print("\n".join(stall_anatomy(s["marks"])))
    if args.breakdown:  # the 15 static frames at the end are in these sums too
        print("\n".join(parts_table(s["frames"] + 15)))
    cost, cost_cpu = row_cost_us(data)
    print(f"synthetic run: {steps:,} steps, {data.count(b'{'):,} rows, {len(data) / 2**20:.1f} MiB streamed in "
          f"{s['wall_s']:.1f} s ({s['rows_per_s']:,.0f} rows/s, chunks of {CHUNK // 1024} KiB)")
    print(f"machine load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          "(wall times include waiting for a core; CPU times are this process's own)")
    print("| measure | wall | CPU | target |")
    print("|---|---|---|---|")
    print(f"| redraw per frame while streaming (median / p95 / max of {s['frames']} frames) | "
          f"{s['frame_median_ms']:.1f} / {s['frame_p95_ms']:.1f} / {s['frame_max_ms']:.1f} ms | "
          f"{s['frame_cpu_median_ms']:.1f} ms | < 20 ms |")
    print(f"| redraw per frame, every curve at {s['points']:,} points (median / max; plots painted each time: "
          f"at least {s['static_painted']} of {s['plots']}) | "
          f"{s['full_median_ms']:.1f} / {s['full_max_ms']:.1f} ms | {s['full_cpu_median_ms']:.1f} ms | < 20 ms |")
    print(f"| longest event-loop stall while streaming (99th percentile; gaps over 50 ms) | "
          f"{s['stall_max_ms']:.1f} ms ({s['stall_p99_ms']:.1f} ms; {s['stalls_over_50']}) | | < 50 ms |")
    print(f"| updates per second of each plot while streaming (slowest / fastest plot) | "
          f"{s['rate_min']:.1f} / {s['rate_max']:.1f} Hz | | 10-30 Hz |")
    print(f"| first paint of the Plots tab (once, pyqtgraph's lazy set-up) | {s['first_paint_ms']:.0f} ms | | |")
    print(f"| split + file one row | {cost:.1f} us | {cost_cpu:.1f} us | |")
    for example in EXAMPLES[:1] if args.quick or args.no_examples else EXAMPLES:
        step_ms = step_time_ms(example, 12 if args.quick else 40)
        print(f"| rows of one step vs a training step of {example} ({step_ms:.1f} ms) | "
              f"{cost / 1000 / step_ms * 100:.3f} % | | < 2 % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
