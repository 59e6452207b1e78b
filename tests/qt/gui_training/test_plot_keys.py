"""A plot's values can be read from the keyboard: focused, the arrow keys step through its points and
the read-out (and the plot's accessible description) says the step and each curve's value there.
Before, only the mouse's hover or the CSV gave a value."""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from revstudio.qt.plots.channel import Channel
from revstudio.qt.plots.metric_plot import MetricPlot
from revstudio.qt.plots.rows import RunData

K = Qt.Key


def _plot(qtbot: Any) -> MetricPlot:
    run = RunData("r")
    run.feed({"kind": "event", "event": "started", "time": 0.0, "mode": "reversible", "regions": [],
              "config": {"steps": 30}, "total_steps": 30})
    for step in (10, 20, 30):
        run.feed({"kind": "step", "step": step, "epoch": step / 10, "time": step / 10, "loss": 3.0 / step,
                  "accuracy": 1 - 1 / step})
    plot = MetricPlot("Accuracy", [Channel("accuracy", "accuracy"), Channel("loss", "loss", dashed=True)])
    qtbot.addWidget(plot)
    plot.resize(500, 300)
    plot.show()
    plot.refresh([(run, "#4a90d9")], "step", 0.0)
    return plot


def test_arrow_keys_step_through_a_focused_plots_points(qtbot: Any) -> None:
    plot = _plot(qtbot)
    widget = plot.plot
    assert widget.focusPolicy() & Qt.FocusPolicy.TabFocus  # Tab reaches it
    widget.setFocus()
    qtbot.waitUntil(widget.hasFocus)
    said = plot.readout.full_text()
    assert said.startswith("step 30:") and "accuracy 0.9667" in said and "loss 0.1" in said, said
    qtbot.keyClick(widget, K.Key_Left)
    assert plot.readout.full_text().startswith("step 20:") and "accuracy 0.95" in plot.readout.full_text()
    assert widget.accessibleDescription() == plot.readout.full_text()  # a screen reader hears the same
    qtbot.keyClick(widget, K.Key_Home)
    assert plot.readout.full_text().startswith("step 10:")
    qtbot.keyClick(widget, K.Key_Left)  # stays at the first point
    assert plot.readout.full_text().startswith("step 10:")
    qtbot.keyClick(widget, K.Key_End)
    assert widget.accessibleDescription().startswith("step 30:")
    assert plot.stepper.marker.isVisible() and plot.stepper.marker.value() == 30


def test_a_plot_without_points_says_so(qtbot: Any) -> None:
    plot = MetricPlot("Loss", [Channel("loss", "loss")])
    qtbot.addWidget(plot)
    plot.show()
    plot.plot.setFocus()
    qtbot.waitUntil(plot.plot.hasFocus)
    qtbot.keyClick(plot.plot, K.Key_Right)
    assert plot.readout.full_text() == "no points yet"
