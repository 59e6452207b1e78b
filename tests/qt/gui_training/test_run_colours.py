"""Overlaid runs never share a colour, and a run keeps its colour while it is shown."""
from __future__ import annotations

from revstudio.qt.plots.metric_plot import PALETTE
from revstudio.qt.plots.panel import PlotsPanel
from revstudio.qt.plots.rows import RunData


def _run(name: str) -> RunData:
    run = RunData(name)
    run.feed({"kind": "event", "event": "started", "time": 0.0, "total_steps": 20})
    for s in (10, 20):
        run.feed({"kind": "step", "step": s, "epoch": s / 10, "time": s * 0.1, "loss": 1.0 / s})
    return run


def test_the_tenth_run_of_a_session_does_not_take_the_first_runs_colour_beside_it(qtbot):
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    runs = [_run(f"run-{i}") for i in range(10)]
    for run in runs:  # a session that looked at ten runs, one after another
        panel.set_runs([run])
    panel.set_runs([runs[0], runs[9]])
    first, tenth = panel.colours["run-0"], panel.colours["run-9"]
    assert first != tenth
    curves = panel.loss.curves
    assert curves[("run-0", "loss")].smooth.opts["pen"].color().name() == first
    assert curves[("run-9", "loss")].smooth.opts["pen"].color().name() == tenth

    # a run keeps its colour from one selection to the next (the first run shown keeps its own)
    panel.set_runs([runs[0], runs[3], runs[9]])
    assert panel.colours["run-0"] == first and panel.colours["run-9"] == tenth
    assert len({panel.colours[r.name] for r in (runs[0], runs[3], runs[9])}) == 3

    # as many runs as colours: all different
    many = [_run(f"many-{i}") for i in range(len(PALETTE))]
    panel.set_runs(many)
    assert len({panel.colours[r.name] for r in many}) == len(PALETTE)
