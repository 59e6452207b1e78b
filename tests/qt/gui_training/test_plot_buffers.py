"""A run keeps as curves only what a plot draws or its CSV export writes: a 100,000-step run held a
buffer for its learning rate ("lr", every row) and one for "estimate_bytes", drawn by nothing."""
from __future__ import annotations

import csv

from revstudio.qt.plots.panel import PlotsPanel
from revstudio.qt.plots.rows import RunData


def _worker_rows(run: RunData, steps: int) -> None:
    """Rows as ``revstudio train --json`` writes them (training/loop.py): every step's loss, accuracy,
    learning rate and throughput, memory every 100 steps, validation every 50, a gradient check."""
    run.feed({"kind": "event", "event": "started", "time": 0.0, "total_steps": steps, "task": "classification",
              "mode": "reversible", "estimate_bytes": 4096, "standard_estimate_bytes": 8192, "regions": ["r0"],
              "config": {"log_every": 1, "memory_every": 100}})
    for s in range(1, steps + 1):
        row = {"kind": "step", "step": s, "epoch": s / 100, "time": s * 0.01, "loss": 2.0 / s,
               "accuracy": 1 - 1 / s, "lr": 0.01, "samples_per_s": 500.0}
        if s % 100 == 0:
            row.update(peak_bytes=3000 + s, estimate_bytes=4096)
        run.feed(row)
        if s % 50 == 0:
            run.feed({"kind": "val", "step": s, "epoch": s / 100, "time": s * 0.01, "val_loss": 2.5 / s,
                      "val_accuracy": 0.5})
    run.feed({"kind": "gradcheck", "step": steps, "time": steps * 0.01,
              "regions": [{"region": "r0", "grad_rel_error": 1e-7, "inversion_error": 1e-8}]})


def test_a_run_keeps_only_the_curves_a_plot_draws(qtbot, tmp_path):
    run = RunData("long")
    _worker_rows(run, 300)
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    panel.set_runs([run])
    drawn = {name for plot in panel.plots for channel in plot.channels for name in channel.names(run)}
    assert drawn == {"loss", "accuracy", "samples_per_s", "peak_bytes", "val_loss", "val_accuracy",
                     "grad_rel_error/r0", "inversion_error/r0"}
    assert set(run.series) == drawn  # no "lr", no "estimate_bytes"
    # and what the plots need still comes: the memory plot's estimate lines (from the started row)
    assert panel.memory.y_marks == [4096.0, 8192.0]
    path = tmp_path / "memory.csv"
    panel.memory.export_csv(str(path))
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) == 1 + 3 and {r[1] for r in rows[1:]} == {"peak_bytes"}
