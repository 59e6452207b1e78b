"""A long saved run selected in the Runs tab: its rows are filed a little per turn of the event loop.

Read whole on selection, a 200,000-row run froze the window for seconds (and each run of an overlay
as long again); benchmarks/bench_saved_runs.py measures it. Here a 50,000-row run of a killed worker:
the selection returns with part of its rows filed, the rest follow while events are processed, and
the run ends up whole, with the status its folder says.
"""
from __future__ import annotations

import json
from pathlib import Path

ROWS = 50_000


def write_long_run(run_dir: Path, steps: int) -> None:
    """A run folder whose worker was killed at ``steps`` (status says running, its process gone)."""
    run_dir.mkdir(parents=True)
    started = {"kind": "event", "event": "started", "time": 0.0, "total_steps": 2 * steps,
               "config": {"log_every": 1}}
    with open(run_dir / "metrics.jsonl", "w", encoding="utf-8") as handle:
        handle.write(json.dumps(started) + "\n")
        handle.writelines(f'{{"kind": "step", "step": {s}, "epoch": {s / 900:.4f}, "loss": {2.0 / (1 + s * 1e-3):.6f}, '
                          f'"time": {s * 0.02:.2f}}}\n' for s in range(1, steps + 1))
    (run_dir / "status.json").write_text(json.dumps(
        {"status": "running", "pid": 4_194_000, "host": "", "process": "gone", "step": steps,
         "total_steps": 2 * steps, "started": "2026-12-01T10:00:00+00:00"}), encoding="utf-8")


def test_a_long_saved_run_is_filed_while_the_window_takes_input(qtbot, train_window):
    window = train_window()
    run_dir = Path(window.document.path).parent / "runs" / "coupling-20261201-100000"
    write_long_run(run_dir, ROWS)
    panel = window.training.runs_panel
    panel.reload()
    window.training.plots.refresh()  # (the Plots tab built: selected runs are drawn in it)
    assert panel.entry(run_dir).status == "killed"

    panel.select_paths([run_dir])
    [run] = window.training.shown_runs()
    assert 0 < len(run.series["loss"]) < ROWS  # part of it filed: the selection did not read it whole

    qtbot.waitUntil(lambda: len(run.series["loss"]) == ROWS, timeout=120_000)
    assert run.step == ROWS and run.status == "killed"  # the folder's word, not the rows' "running"
    window.training.plots.refresh(force=True)
    assert window.training.plots.loss.curve_points()[(run_dir.name, "loss")] > 0


def test_a_run_deselected_while_it_is_read_is_let_go(qtbot, train_window):
    window = train_window()
    runs = Path(window.document.path).parent / "runs"
    first, second = runs / "coupling-20261201-100000", runs / "coupling-20261201-110000"
    write_long_run(first, ROWS)
    write_long_run(second, 10)
    panel = window.training.runs_panel
    panel.reload()
    window.training.plots.refresh()
    panel.select_paths([first])
    [partial] = window.training.shown_runs()
    panel.select_paths([second])
    qtbot.wait(300)  # (turns of the event loop in which the first run's reading would go on)
    assert len(partial.series["loss"]) < ROWS  # no longer read once another run was selected
    [shown] = window.training.shown_runs()
    assert shown.step == 10 and shown.status == "killed"
    panel.select_paths([first])  # selected again: read again, from its first row, to its last
    [again] = window.training.shown_runs()
    qtbot.waitUntil(lambda: len(again.series["loss"]) == ROWS, timeout=120_000)
    assert again.series["loss"].view("step", "value")[0][0] == 1.0
