"""Hovering a plot marks each curve's nearest point with a dot in its run's colour (TensorBoard, W&B);
a double click frames the plot again after a zoom or pan."""
from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtWidgets import QApplication

from revstudio.qt.plots.channel import Channel
from revstudio.qt.plots.metric_plot import MetricPlot
from revstudio.qt.plots.rows import RunData


def _run(name: str, scale: float, steps: int = 200) -> RunData:
    run = RunData(name)
    run.feed({"kind": "event", "event": "started", "time": 0.0, "total_steps": steps, "task": "classification"})
    for s in range(1, steps + 1):
        run.feed({"kind": "step", "step": s, "epoch": s / 50, "time": s * 0.1,
                  "loss": scale * math.exp(-s / 60) + (0.2 if s % 2 else 0.0)})
    return run


def _plot(qtbot: Any, runs: list[tuple[RunData, str]], weight: float) -> MetricPlot:
    plot = MetricPlot("Loss", [Channel("loss", "loss"), Channel("val_loss", "val loss", dashed=True)])
    qtbot.addWidget(plot)
    plot.resize(600, 320)
    plot.show()
    qtbot.waitExposed(plot)
    for run, _c in runs:
        run.set_weight(weight)
    plot.refresh(runs, "step", weight)
    return plot


def _widget_pos(plot: MetricPlot, x: float, y: float) -> Any:
    vb = plot.plot.getPlotItem().getViewBox()
    return plot.plot.mapFromScene(vb.mapViewToScene(QPointF(x, y)))


def test_hovering_marks_each_runs_point_in_its_colour_on_the_smoothed_curve(qtbot):
    a, b = _run("run-a", 2.0), _run("run-b", 4.0)
    plot = _plot(qtbot, [(a, "#3a86e8"), (b, "#d26e1a")], 0.9)
    qtbot.mouseMove(plot.plot.viewport(), _widget_pos(plot, 100.2, 1.0))
    qtbot.waitUntil(lambda: plot.hover.dots.isVisible())
    spots = sorted(((s.pos().x(), s.pos().y(), s.brush().color().name()) for s in plot.hover.dots.points()),
                   key=lambda t: t[2])
    assert [c for _x, _y, c in spots] == ["#3a86e8", "#d26e1a"]
    for (x, y, _c), run in zip(spots, (a, b)):
        assert x == 100  # the nearest step
        assert y == run.series["loss"].point(99)["smooth"]  # on the smoothed curve, not the raw zigzag
        assert y != run.series["loss"].point(99)["value"]
    assert plot.hover.line.isVisible() and abs(plot.hover.line.value() - 100.2) < 1.0
    assert "run-a: loss" in plot.readout.full_text()
    QApplication.sendEvent(plot.plot.viewport(), QEvent(QEvent.Type.Leave))  # the mouse left the plot
    assert not plot.hover.dots.isVisible() and not plot.hover.line.isVisible()


def test_without_smoothing_the_dot_sits_on_the_raw_point_and_a_log_axis_is_followed(qtbot):
    run = _run("solo", 2.0)
    plot = _plot(qtbot, [(run, "#3a86e8")], 0.0)
    plot.set_log_y(True)
    plot.refresh([(run, "#3a86e8")], "step", 0.0)
    qtbot.mouseMove(plot.plot.viewport(), _widget_pos(plot, 51, 0.0))
    qtbot.waitUntil(lambda: plot.hover.dots.isVisible())
    (spot,) = plot.hover.dots.points()
    assert spot.pos().x() == 51
    assert abs(spot.pos().y() - math.log10(run.series["loss"].point(50)["value"])) < 1e-12


def test_a_double_click_frames_a_zoomed_plot_again(qtbot):
    run = _run("solo", 2.0)
    plot = _plot(qtbot, [(run, "#3a86e8")], 0.6)
    vb = plot.plot.getPlotItem().getViewBox()
    framed_x, framed_y = vb.viewRange()
    assert framed_x[0] <= 0 and framed_x[1] >= 200  # the whole run
    vb.setRange(xRange=(40, 60), yRange=(0.5, 0.7), padding=0)  # zoomed in, as the wheel does
    plot.refresh([(run, "#3a86e8")], "step", 0.6)
    assert vb.viewRange()[0] == [40, 60]  # a zoom is left alone while the run streams
    qtbot.mouseDClick(plot.plot.viewport(), Qt.MouseButton.LeftButton, pos=_widget_pos(plot, 50, 0.6))
    qtbot.waitUntil(lambda: vb.viewRange()[0][1] >= 200)
    x_range, y_range = vb.viewRange()
    assert x_range[0] <= 0 and abs(x_range[0] - framed_x[0]) < 1 and abs(x_range[1] - framed_x[1]) < 1
    assert y_range[0] < 0.3 and y_range[1] > 2.0  # every point in view again
    assert plot._zoomed_range() is None  # following the run again: new points extend the curve


def _val_run(name: str, steps: int = 100, scale: float = 2.0) -> RunData:
    run = _run(name, scale, steps)
    for s in range(20, steps + 1, 20):
        run.feed({"kind": "val", "step": s, "epoch": s / 50, "time": s * 0.1,
                  "val_loss": 0.75 * scale * math.exp(-s / 60)})
    return run


def _legend(plot: MetricPlot) -> list[tuple[str, Any]]:
    return [(label.text, sample.item.opts["pen"].style()) for sample, label in plot.plot.getPlotItem().legend.items]


def test_overlaid_runs_legend_says_which_line_is_validation(qtbot):
    """Overlaid, the legend named the runs only: nothing said the dashed line was the validation loss."""
    a, b = _val_run("run-a"), _val_run("run-b")
    plot = _plot(qtbot, [(a, "#3a86e8"), (b, "#d26e1a")], 0.6)
    dash, solid = Qt.PenStyle.DashLine, Qt.PenStyle.SolidLine
    assert _legend(plot) == [("run-a", solid), ("run-b", solid), ("loss", solid), ("val loss", dash)]
    assert plot.plot.getPlotItem().legend.isVisible()
    for item in plot.keys.items.values():  # the key draws nothing on the plot itself
        assert item.getData()[0] is None or len(item.getData()[0]) == 0

    c = _val_run("run-c")  # a third run selected: its entry comes with the runs', before the key
    plot.refresh([(a, "#3a86e8"), (b, "#d26e1a"), (c, "#409a3c")], "step", 0.6)
    assert [t for t, _s in _legend(plot)] == ["run-a", "run-b", "run-c", "loss", "val loss"]

    # runs without validation: one style, nothing to tell apart
    plot.refresh([(_run("x", 1.0), "#3a86e8"), (_run("y", 2.0), "#d26e1a")], "step", 0.6)
    assert [t for t, _s in _legend(plot)] == ["x", "y"]
    # a single run names its own curves
    plot.refresh([(a, "#3a86e8")], "step", 0.6)
    assert [t for t, _s in _legend(plot)] == ["loss", "val loss"]


def test_the_hover_box_gives_every_curves_value_where_the_read_out_is_cut_short(qtbot):
    """Two runs with validation overlaid: the read-out's one line
    ended in "…" before the second run's values; the box beside the mouse lists each curve."""
    a, b = _val_run("run-a"), _val_run("run-b", scale=3.0)
    plot = _plot(qtbot, [(a, "#3a86e8"), (b, "#d26e1a")], 0.6)
    plot.resize(540, 300)
    plot.refresh([(a, "#3a86e8"), (b, "#d26e1a")], "step", 0.6)
    qtbot.mouseMove(plot.plot.viewport(), _widget_pos(plot, 60, 1.0))
    qtbot.waitUntil(lambda: plot.hover.box.isVisible())
    qtbot.waitUntil(lambda: plot.readout.text().endswith("…"))  # the read-out cannot show it all
    la, lb = a.series["loss"].point(59), b.series["loss"].point(59)
    va, vb_ = a.series["val_loss"].point(2), b.series["val_loss"].point(2)  # step 60
    assert plot.hover.box_lines() == [
        f"run-a: loss {la['smooth']:.4g} (raw {la['value']:.4g})",
        f"run-a: val loss {va['smooth']:.4g} (raw {va['value']:.4g})",
        f"run-b: loss {lb['smooth']:.4g} (raw {lb['value']:.4g})",
        f"run-b: val loss {vb_['smooth']:.4g} (raw {vb_['value']:.4g})",
    ]
    text = plot.hover.box.textItem.toPlainText()
    assert text.startswith("step 60") and "run-b: val loss" in text
    # beside the line and inside the plot: right of it where it fits there, else left of it
    vb = plot.plot.getPlotItem().getViewBox()
    frame = vb.sceneBoundingRect()
    for step, right in ((10, True), (60, False), (95, False)):
        qtbot.wait(50)  # (pyqtgraph drops a mouse move that comes sooner than 1/60 s after the last)
        qtbot.mouseMove(plot.plot.viewport(), _widget_pos(plot, step, 1.0))
        line_x = vb.mapViewToScene(QPointF(step, 0)).x()
        qtbot.waitUntil(lambda step=step: abs(plot.hover.line.value() - step) < 1)
        box = plot.hover.box.sceneBoundingRect()
        assert (box.left() > line_x if right else box.right() < line_x) and frame.contains(box), (step, box, frame)
    QApplication.sendEvent(plot.plot.viewport(), QEvent(QEvent.Type.Leave))
    assert not plot.hover.box.isVisible()


def test_long_run_names_are_shortened_in_the_middle_so_the_box_stays_inside_the_plot(qtbot):
    """Timestamped run folders ("digits_revnet-20261207-095612") made the box wider than a plot a third
    of a window wide: it was cut at the plot's edge, values included."""
    a, b = _val_run("digits_revnet-20261207-095612"), _val_run("digits_revnet-20261207-095709", scale=3.0)
    plot = _plot(qtbot, [(a, "#3a86e8"), (b, "#d26e1a")], 0.6)
    plot.resize(400, 300)
    plot.refresh([(a, "#3a86e8"), (b, "#d26e1a")], "step", 0.6)
    qtbot.wait(50)
    qtbot.mouseMove(plot.plot.viewport(), _widget_pos(plot, 40, 1.0))
    qtbot.waitUntil(lambda: plot.hover.box.isVisible())
    vb = plot.plot.getPlotItem().getViewBox()
    assert vb.sceneBoundingRect().contains(plot.hover.box.sceneBoundingRect())
    lines = plot.hover.box_lines()
    assert len(lines) == 4 and all("…" in line for line in lines), lines
    assert lines[0].split(":")[0].endswith("5612") and lines[2].split(":")[0].endswith("5709")
    assert lines[1].endswith(f"val loss {a.series['val_loss'].point(1)['smooth']:.4g}")  # the value stays whole


def test_the_hover_box_follows_a_run_that_streams_under_a_resting_mouse(qtbot):
    run = _val_run("live", steps=100)
    run.total_steps = 200  # half way through: the x axis spans the whole run
    plot = _plot(qtbot, [(run, "#3a86e8")], 0.9)
    qtbot.mouseMove(plot.plot.viewport(), _widget_pos(plot, 150, 1.0))  # past the newest point (step 100)
    qtbot.waitUntil(lambda: plot.hover.box.isVisible())
    assert plot.hover.box_lines()[0] == f"loss {run.series['loss'].point(99)['smooth']:.4g} " \
                                        f"(raw {run.series['loss'].point(99)['value']:.4g})"
    for s in range(101, 151):  # the run goes on; the mouse does not move
        run.feed({"kind": "step", "step": s, "epoch": s / 50, "time": s * 0.1, "loss": 5.0})
    plot.refresh([(run, "#3a86e8")], "step", 0.9)
    newest = run.series["loss"].point(149)
    assert plot.hover.box_lines()[0] == f"loss {newest['smooth']:.4g} (raw 5)"
    assert any(spot.pos().x() == 150 for spot in plot.hover.dots.points())
    plot.refresh([], "step", 0.9)  # no run shown any more
    assert not plot.hover.box.isVisible() and not plot.hover.dots.isVisible()
