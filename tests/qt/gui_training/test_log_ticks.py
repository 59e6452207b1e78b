"""The gradient-check plot's log axis keeps its tick labels apart for any span: glow_flow's
first run (disagreements 1e-7..1e-6 in a short plot) drew fifteen labels over each other."""
from __future__ import annotations

import math

import pytest
from PySide6.QtGui import QFontMetricsF

from revstudio.qt.plots.panel import PlotsPanel
from revstudio.qt.plots.rows import RunData


def _run(values: list[float]) -> RunData:
    run = RunData("glow_flow-20261206-120000")
    run.feed({"kind": "event", "event": "started", "time": 0.0, "mode": "reversible", "regions": ["r0"],
              "config": {"precision": "fp32", "gradcheck_every": 10, "steps": 100}, "total_steps": 100})
    for i, step in enumerate(range(10, 101, 10)):
        v = values[i % len(values)]
        run.feed({"kind": "step", "step": step, "epoch": 0, "time": step, "loss": 1.0 / step})
        run.feed({"kind": "gradcheck", "step": step, "epoch": 0, "time": step,
                  "regions": [{"region": "r0", "grad_rel_error": v, "inversion_error": 0.8 * v}]})
    return run


@pytest.mark.parametrize("values", [
    [1.1e-7, 3e-7, 4.4e-7, 8e-7],     # under two decades (the first run's)
    [2.1e-7, 3.0e-7, 4.4e-7],         # under one decade
    [2.10e-7, 2.12e-7, 2.15e-7],      # inside one mantissa step
    [1e-12, 3e-3],                    # many decades
])
@pytest.mark.parametrize("height", [380, 700])
def test_log_tick_labels_never_overlap_and_name_at_least_two_values(qtbot, values, height):
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    panel.resize(900, height)
    panel.show()
    qtbot.waitExposed(panel)
    panel.set_runs([_run(values)])
    qtbot.wait(50)
    panel.refresh(force=True)
    qtbot.wait(50)
    plot = panel.gradcheck.plot.getPlotItem()
    assert panel.gradcheck.log_y
    axis = plot.getAxis("left")
    lo, hi = plot.vb.viewRange()[1]
    ticks = sorted(v for _s, level in axis.tickValues(lo, hi, axis.height()) for v in level)
    labels = axis.tickStrings(ticks, 1.0, 1.0)
    line = QFontMetricsF(axis.style.get("tickFont") or axis.font()).height()
    px = [(t - lo) / (hi - lo) * axis.height() for t in ticks]
    assert len(ticks) >= 2 and len(set(labels)) == len(labels) and all(labels), labels
    assert all(b - a >= line for a, b in zip(px, px[1:])), (labels, [round(b - a) for a, b in zip(px, px[1:])])
    assert all(math.isfinite(t) and lo - 1e-9 <= t <= hi + 1e-9 for t in ticks)
