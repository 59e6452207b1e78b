"""What the plots frame: estimate labels clear of the measured curve, and no stale axes when empty."""
from __future__ import annotations

from PySide6.QtCore import QPointF

from revstudio.qt.plots.panel import PlotsPanel
from revstudio.qt.plots.rows import RunData


def _run(estimate: int, standard: int, peak: int, steps: int = 200) -> RunData:
    run = RunData("mem")
    run.feed({"kind": "event", "event": "started", "time": 0.0, "mode": "reversible", "estimate_bytes": estimate,
              "standard_estimate_bytes": standard, "total_steps": steps, "regions": ["r0"],
              "config": {"precision": "fp32"}})
    for s in range(1, steps + 1):
        row = {"kind": "step", "step": s, "epoch": s / 100, "time": s * 0.01, "loss": 1.0, "samples_per_s": 800.0}
        if s >= 100:  # measured from the memory interval on, as a run does
            row["peak_bytes"] = peak
        run.feed(row)
    return run


def _curve_points(panel: PlotsPanel) -> list[QPointF]:
    points = []
    for curve in panel.memory.curves.values():
        for item in (curve.raw, curve.smooth):
            xs, ys = item.getData()
            if xs is None:
                continue
            for k in range(0, len(xs), 5):
                points.append(item.mapToScene(QPointF(float(xs[k]), float(ys[k]))))
    return points


def test_an_estimate_label_is_not_struck_through_by_the_measured_peak(qtbot):
    """A tiny run measured 770 KiB over a reversible estimate of 640 KiB: the measured line ran
    through "est. reversible 640.3 KiB" (its label sat above its line, where the curve was)."""
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    panel.resize(740, 330)
    panel.show()
    qtbot.waitExposed(panel)
    for estimate, standard, peak in ((655_667, 196_608, 788_000), (3_000_000, 10_000_000, 2_900_000),
                                     (3_000_000, 10_000_000, 3_100_000), (640_000, 600_000, 700_000)):
        panel.set_runs([_run(estimate, standard, peak)])
        qtbot.wait(50)
        points = _curve_points(panel)
        assert points
        lines = [line for line in panel._memory_refs if line.isVisible()]
        assert len(lines) == 2
        for line in lines:
            box = line.label.sceneBoundingRect().adjusted(0, 2, 0, -2)  # (the text box has a margin)
            hit = [p for p in points if box.contains(p)]
            assert not hit, (estimate, standard, peak, line.label.toPlainText(), box, hit[:3])
            # still beside its own line
            y = line.mapToScene(QPointF(0, 0)).y()
            assert box.top() - 4 <= y <= box.bottom() + 4, (line.label.toPlainText(), box, y)


def test_plots_left_empty_drop_the_last_runs_axes(qtbot):
    """After New (no run shown) the empty plots kept the old run's axes (steps 0-150, loss
    0.8-1.4), as if a run were drawn there; they are framed as before any run."""
    fresh = PlotsPanel()
    panel = PlotsPanel()
    for p in (fresh, panel):
        qtbot.addWidget(p)
        p.resize(740, 330)
        p.show()
        qtbot.waitExposed(p)
    panel.set_runs([_run(655_667, 196_608, 788_000, steps=400)])
    qtbot.wait(50)
    panel.set_runs([])
    qtbot.wait(50)
    for mine, theirs in zip(panel.plots, fresh.plots):
        got = mine.plot.getPlotItem().getViewBox().viewRange()
        want = theirs.plot.getPlotItem().getViewBox().viewRange()
        assert got == want, (mine.title if hasattr(mine, "title") else mine, got, want)


def test_a_linear_axis_of_values_never_below_zero_starts_at_zero(qtbot):
    """A loss falling to 0.05 was framed from -0.5: a band of negative losses under the curve."""
    import math

    panel = PlotsPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 500)
    panel.show()
    run = RunData("falling")
    run.feed({"kind": "event", "event": "started", "time": 0.0, "total_steps": 300, "task": "regression"})
    for s in range(1, 301):
        run.feed({"kind": "step", "step": s, "epoch": s / 100, "time": s * 0.01,
                  "loss": 2.0 * math.exp(-s / 30) + 0.05, "samples_per_s": 800.0 + s})
    panel.set_runs([run])
    lo, hi = panel.loss.plot.getPlotItem().getViewBox().viewRange()[1]
    assert lo == 0 and hi > 2.0
    lo, _hi = panel.throughput.plot.getPlotItem().getViewBox().viewRange()[1]
    assert 0 < lo < 801  # far from 0: the margin below the curve as before
    panel.loss.log_box.setChecked(True)  # a log axis keeps its margin of decades
    lo, _hi = panel.loss.plot.getPlotItem().getViewBox().viewRange()[1]
    assert lo < math.log10(0.05)

    below = RunData("flow")  # a flow's loss may go below 0: its margin below stays
    below.feed({"kind": "event", "event": "started", "time": 0.0, "total_steps": 100, "task": "flow"})
    for s in range(1, 101):
        below.feed({"kind": "step", "step": s, "epoch": s / 100, "time": s * 0.01, "loss": 1.0 - s / 50})
    panel.loss.log_box.setChecked(False)
    panel.set_runs([below])
    lo, _hi = panel.loss.plot.getPlotItem().getViewBox().viewRange()[1]
    assert lo < -1.0
