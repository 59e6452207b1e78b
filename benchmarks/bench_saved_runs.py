"""A user with hundreds of runs: the run tools on big run folders (made by ``long_runs.py``).

Measured (the commands' wall time; in the app, the GUI thread's CPU time, so that a shared machine's
other work does not count, and the wall time to the last row filed):

- ``revstudio runs`` and ``runs --json`` of a project's 300 runs (finished, failed, killed, half
  written; one in 30 of 20,000 rows, the rest of 2,000), each in a child process, as a user runs it;
- the app's Runs tab listing them (``RunsPanel.set_root``) and sorting them by loss (a header click);
- selecting a 200,000-row run in the Runs tab (step rows every step, val every 1,000, gradient checks
  every 2,000): the longest the event loop is held (the largest gap between ticks of a 1 ms timer, in
  this thread's CPU time),
  the time to the first paint of its curves, to the whole run filed, and the memory it holds (the process's resident set, before and after);
- ten such runs overlaid (selected together), and the Runs tab's detail of them (what differs and
  whether their loss rows are the same, ``run_compare``), and ``revstudio runs --compare`` of them;
- those ten runs selected one after another in the Runs tab (a user's Ctrl+clicks, each waited on
  until its detail is complete): the UI thread's CPU time in each click, the longest the event loop
  is held (a 1 ms timer's largest gap, CPU and wall), and the wall time to each complete detail
  (``--detail-only``: just this, on the long runs alone);
- typing into the Runs tab's filter box over the 300 runs: each keystroke's time until the tab has
  repainted (the key sent as a user's, the events it posts handled, the panel painted), wall and the
  GUI thread's CPU (``--filter-only``: just this, on 300 runs of few rows, made in seconds).

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_saved_runs.py [--quick] [--detail-only] [--filter-only]
"""
from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from long_runs import EXAMPLE, PROJECT, long_run, runs_folder  # noqa: E402


class QuietDialogs:
    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


def _rss() -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _cli(*args: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "revstudio", *args], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _window(project: Path) -> Any:
    from PySide6.QtCore import QStandardPaths

    QStandardPaths.setTestModeEnabled(True)
    from revstudio.qt.autosave import RecoveryStore
    from revstudio.qt.document import Document
    from revstudio.qt.files import read_project
    from revstudio.qt.main_window import MainWindow
    from revstudio.qt.settings import Settings

    window = MainWindow(Document(read_project(str(project)), str(project)), Settings(), QuietDialogs(),
                        RecoveryStore(project.parent / "recovery"))
    window.resize(1400, 900)
    window.show()
    window.training.show_tab("Plots")
    window.training.plots.refresh()  # (built: the selection draws into it)
    return window


def _select(app: Any, window: Any, paths: list[Path]) -> dict[str, float]:
    """Select ``paths`` in the Runs tab and run the event loop until their rows are all filed."""
    from PySide6.QtCore import QElapsedTimer, QEvent, QObject, QTimer

    plots = window.training.plots
    first_paint: list[float] = []
    clock = QElapsedTimer()

    class Paints(QObject):
        def eventFilter(self, obj: Any, event: Any) -> bool:  # noqa: N802 - Qt API
            if event.type() == QEvent.Type.Paint and not first_paint and any(
                    n for (_run, s), n in plots.loss.curve_points().items() if s == "loss"):
                first_paint.append((time.thread_time() - cpu0) * 1000)
            return False

    spy = Paints()
    plots.loss.plot.viewport().installEventFilter(spy)
    gaps: list[float] = []
    last = [time.thread_time()]

    def tick() -> None:  # (CPU time of this thread: the machine's other work does not count)
        now = time.thread_time()
        gaps.append(now - last[0])
        last[0] = now

    ticker = QTimer()
    ticker.setInterval(1)
    ticker.timeout.connect(tick)
    gc.collect()
    rss = _rss()
    ticker.start()
    clock.start()
    cpu0 = time.thread_time()
    last[0] = time.thread_time()
    window.training.runs_panel.select_paths(paths)
    tick()  # (the selection itself is a gap)
    while getattr(window.training, "_loading", None) or not first_paint:
        app.processEvents()
        if clock.elapsed() > 600_000:
            break
    wall, cpu = clock.elapsed(), (time.thread_time() - cpu0) * 1000
    ticker.stop()
    app.processEvents()
    gc.collect()
    held = _rss() - rss
    plots.loss.plot.viewport().removeEventFilter(spy)
    return {"stall_ms": max(gaps) * 1000, "first_paint_ms": first_paint[0] if first_paint else float("nan"),
            "cpu_ms": cpu, "wall_ms": wall, "held_mb": held / 1e6}


def _clicks(app: Any, panel: Any, paths: list[Path]) -> dict[str, float]:
    """Add ``paths`` to the Runs tab's selection one at a time, each once the detail of the one before is
    complete (a tree without the worker compares inside the click)."""
    from PySide6.QtCore import QTimer

    gaps: list[tuple[float, float]] = []
    last = [time.thread_time(), time.perf_counter()]

    def tick() -> None:
        now = (time.thread_time(), time.perf_counter())
        gaps.append((now[0] - last[0], now[1] - last[1]))
        last[:] = now

    ticker = QTimer()
    ticker.setInterval(1)
    ticker.timeout.connect(tick)
    panel.select_paths([])
    app.processEvents()
    comparer = getattr(panel, "comparer", None)
    click_cpu: list[float] = []
    waits: list[float] = []
    ticker.start()
    t_all = time.perf_counter()
    for path in paths:
        last[:] = [time.thread_time(), time.perf_counter()]
        t0, c0 = time.perf_counter(), time.thread_time()
        panel._select({path})  # (a Ctrl+click: the row added to the selection)
        click_cpu.append(time.thread_time() - c0)
        tick()  # (the click itself is a gap)
        while comparer is not None and comparer.busy():
            app.processEvents()
        waits.append(time.perf_counter() - t0)
    ticker.stop()
    return {"click_cpu_ms": max(click_cpu) * 1000, "all_cpu_ms": sum(click_cpu) * 1000,
            "stall_cpu_ms": max(g[0] for g in gaps) * 1000, "stall_wall_ms": max(g[1] for g in gaps) * 1000,
            "last_wait_s": waits[-1], "all_s": time.perf_counter() - t_all}


def _detail_table(app: Any, runs: Path, longs: list[Path], big: int) -> None:
    from revstudio.qt.runs.panel import RunsPanel

    try:
        from revstudio.training import loss_rows
    except ImportError:  # (a tree from before the rows were kept)
        loss_rows = None
    panel = RunsPanel()
    panel.resize(1200, 700)
    panel.show()
    panel.set_root(runs, PROJECT)
    print(f"| {len(longs)} runs of {big:,} rows selected one by one | UI CPU per click, max | all clicks | "
          "longest stall (CPU) | (wall) | last detail complete (wall) | whole sequence (wall) | files read |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label in ("first time", "again (rows kept)"):
        if loss_rows is not None:
            loss_rows.reads.clear()
            if label == "first time":
                loss_rows.forget()  # (cold: the rows read by the measurements above dropped)
        found = _clicks(app, panel, longs)
        reads = sum(loss_rows.reads.values()) if loss_rows is not None else "every selected, every click"
        print(f"| {label} | {found['click_cpu_ms']:,.0f} ms | {found['all_cpu_ms']:,.0f} ms | "
              f"{found['stall_cpu_ms']:,.0f} ms | {found['stall_wall_ms']:,.0f} ms | {found['last_wait_s']:.1f} s | "
              f"{found['all_s']:.1f} s | {reads} |")
    panel.close()


def _filter_table(app: Any, panel: Any) -> None:
    """Type words into the filter box key by key (then empty it with Esc): each key's time to repaint."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    panel.window().show()
    panel.window().activateWindow()
    app.processEvents()
    rows: list[tuple[str, str, float, float]] = []
    for words in ("failed", "status:finished 20261201-0", "coupling zzz"):
        panel.filter.edit.clear()
        app.processEvents()
        typed = ""
        for key in [*words, "Esc"]:
            wall0, cpu0 = time.perf_counter(), time.thread_time()
            if key == "Esc":
                QTest.keyClick(panel.filter.edit, Qt.Key.Key_Escape)
            else:
                QTest.keyClicks(panel.filter.edit, key)
            app.processEvents()
            panel.repaint()  # (what the key changed, painted now)
            wall, cpu = (time.perf_counter() - wall0) * 1000, (time.thread_time() - cpu0) * 1000
            typed = typed + key if key != "Esc" else ""
            rows.append((words, f"{typed!r} -> {panel.filter.count.text()}", wall, cpu))
    walls, cpus = sorted(r[2] for r in rows), sorted(r[3] for r in rows)
    print(f"| filter box over {panel.table.rowCount()} runs, {len(rows)} keys | median | longest |")
    print("|---|---:|---:|")
    print(f"| keystroke to repaint, wall | {walls[len(walls) // 2]:.1f} ms | {walls[-1]:.1f} ms |")
    print(f"| keystroke to repaint, GUI-thread CPU | {cpus[len(cpus) // 2]:.1f} ms | {cpus[-1]:.1f} ms |")
    slow = max(rows, key=lambda r: r[2])
    print(f"\n(the longest: {slow[1]}, {slow[2]:.1f} ms wall)\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 runs, a 20,000-row run, two overlaid")
    parser.add_argument("--folder", help="make the runs here, or use those made there before (another tree's "
                                         "benchmark on the same runs), instead of in a temporary folder")
    parser.add_argument("--detail-only", action="store_true", help="only the long runs, selected one by one "
                                                                 "in the Runs tab (its several-run detail)")
    parser.add_argument("--filter-only", action="store_true", help="only the filter box, on 300 runs of 200 rows")
    args = parser.parse_args()
    count, big, overlay = (30, 20_000, 2) if args.quick else (300, 200_000, 10)

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(args.folder or tmp)
        project = base / "project" / f"{PROJECT}.revs"
        runs = project.parent / "runs"
        longs = [runs / f"{PROJECT}-20261231-{i:02d}0000" for i in range(overlay)]
        if not (base / "made").exists():
            project.parent.mkdir(parents=True)
            project.write_bytes(EXAMPLE.read_bytes())
            t0 = time.perf_counter()
            if args.filter_only:
                runs_folder(str(runs), count, str(base), steps=200, long_every=count + 1)
                longs = []
            elif not args.detail_only:
                runs_folder(str(runs), count, str(base), long_steps=big // 10)
            for i, path in enumerate(longs):
                long_run(str(path), big, str(base), seed=1000 + i, started=f"2026-12-31T{i:02d}:00:00+00:00")
            (base / "made").write_text(f"{time.perf_counter() - t0:.0f}")
        size = sum(f.stat().st_size for f in runs.rglob("*") if f.is_file())
        print(f"{len(list(runs.iterdir()))} runs ({size / 1e6:.0f} MB), made in {(base / 'made').read_text()} s\n")
        if args.detail_only:
            from PySide6.QtWidgets import QApplication

            _detail_table(QApplication.instance() or QApplication([]), runs, longs, big)
            return
        if args.filter_only:
            from PySide6.QtWidgets import QApplication

            app = QApplication.instance() or QApplication([])
            window = _window(project)
            window.training.show_tab("Runs")
            window.training.runs_panel.set_root(runs, PROJECT)
            _filter_table(app, window.training.runs_panel)
            window.close()
            return

        print("| what | wall |")
        print("|---|---:|")
        for what in (("runs", str(runs)), ("runs", str(runs), "--json"), ("runs", str(runs), "--sort", "loss")):
            print(f"| revstudio {' '.join(what[:1] + what[2:])} ({count + overlay} runs) | {_cli(*what):.2f} s |")

        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QApplication

        app = QApplication.instance() or QApplication([])
        window = _window(project)
        panel = window.training.runs_panel
        t0 = time.perf_counter()
        panel.set_root(runs, PROJECT)
        listed = time.perf_counter() - t0
        app.processEvents()  # (the window's first paint)
        t0 = time.perf_counter()
        panel.table.sortByColumn(panel.table.columnCount() - 1, Qt.SortOrder.AscendingOrder)
        app.processEvents()
        sort = time.perf_counter() - t0
        print(f"| Runs tab: list {panel.table.rowCount()} runs | {listed * 1000:.0f} ms |")
        print(f"| Runs tab: sort them by a column | {sort * 1000:.0f} ms |")

        from revstudio.qt.runs.compare_runs import several_runs_text

        entries = [panel.entry(p) for p in longs]
        cpu0 = time.thread_time()
        several_runs_text(entries, [e.metrics for e in entries], lambda _k, v: str(v))
        detail = time.thread_time() - cpu0
        print(f"| Runs tab: the detail of {overlay} selected runs of {big:,} rows (loss rows compared) | "
              f"{detail * 1000:.0f} ms CPU |")
        print(f"| revstudio runs --compare of those {overlay} runs | "
              f"{_cli('runs', *map(str, longs), '--compare'):.2f} s |\n")

        print("| selected | longest event-loop stall | first paint | all rows filed | (wall) | memory held |")
        print("|---|---:|---:|---:|---:|---:|")
        for label, chosen in ((f"one run of {big:,} rows", longs[:1]), (f"{overlay} runs of {big:,} rows", longs)):
            panel.select_paths([])
            window.training._overlay_cache.clear()
            app.processEvents()
            found = _select(app, window, chosen)
            print(f"| {label} | {found['stall_ms']:.0f} ms | {found['first_paint_ms']:.0f} ms | "
                  f"{found['cpu_ms']:.0f} ms | {found['wall_ms'] / 1000:.1f} s | {found['held_mb']:.0f} MB |")
        window.training.show_tab("Runs")
        _filter_table(app, panel)
        window.close()
        print()
        _detail_table(app, runs, longs, big)


if __name__ == "__main__":
    main()
