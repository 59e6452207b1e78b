"""A plot's values can be read from the keyboard: focused, the arrow keys step through its points and
the read-out (and the plot's accessible description) says the step and each curve's value there.
Before, only the mouse's hover or the CSV gave a value."""
from __future__ import annotations

from typing import Any

import pytest
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


@pytest.mark.parametrize("name", ["dark", "light"])
def test_a_focused_plot_shows_the_canvas_focus_frame(qtbot: Any, name: str) -> None:
    """Focused, a plot takes the arrow keys, so it says so as the canvas does: a 2 px frame in the
    theme's hover colour (before, nothing showed where the keys went)."""
    from PySide6.QtWidgets import QApplication

    from revstudio.qt import theme
    from revstudio.qt.canvas.theme import theme_for

    start = theme.current()
    theme.apply_theme(QApplication.instance(), name)  # type: ignore[arg-type]
    try:
        plot = _plot(qtbot)
        widget = plot.plot
        hover = theme_for(name == "dark").hover.name()

        def edge_colours() -> set[str]:
            image = widget.grab().toImage()
            w, h = image.width(), image.height()
            return {image.pixelColor(x, y).name() for x, y in ((1, h // 2), (w - 2, h // 2), (w // 2, 1),
                                                               (w // 2, h - 2))}

        assert hover not in edge_colours()  # not focused: no frame
        widget.setFocus()
        qtbot.waitUntil(widget.hasFocus)
        assert edge_colours() == {hover}  # all four sides
        plot.log_box.setFocus()
        qtbot.waitUntil(lambda: not widget.hasFocus())
        assert hover not in edge_colours()
    finally:
        theme.apply_theme(QApplication.instance(), start)  # type: ignore[arg-type]


def test_plus_minus_zoom_a_focused_plot_about_its_centre_and_0_frames_the_whole_run(qtbot: Any) -> None:
    """The wheel zoomed and a double click framed the plot again; from the keyboard nothing did."""
    run = RunData("long")
    run.feed({"kind": "event", "event": "started", "time": 0.0, "total_steps": 1000})
    for step in range(1, 1001):
        run.feed({"kind": "step", "step": step, "epoch": step / 100, "time": step / 10, "loss": 3.0 / step})
    plot = MetricPlot("Loss", [Channel("loss", "loss")])
    qtbot.addWidget(plot)
    plot.resize(500, 300)
    plot.show()
    plot.refresh([(run, "#4a90d9")], "step", 0.0)
    vb = plot.plot.getPlotItem().getViewBox()
    whole = tuple(vb.viewRange()[0])
    assert whole[0] < 1 and whole[1] > 1000  # the run's whole length
    plot.plot.setFocus()
    qtbot.waitUntil(plot.plot.hasFocus)

    qtbot.keyClick(plot.plot, K.Key_Plus)
    lo, hi = vb.viewRange()[0]
    assert hi - lo == pytest.approx(0.8 * (whole[1] - whole[0]))
    assert (lo + hi) / 2 == pytest.approx((whole[0] + whole[1]) / 2)  # about its centre
    qtbot.keyClick(plot.plot, K.Key_Equal)  # + without Shift
    qtbot.keyClick(plot.plot, K.Key_Plus)
    lo, hi = vb.viewRange()[0]
    assert hi - lo == pytest.approx(0.8 ** 3 * (whole[1] - whole[0]))
    assert plot.dirty  # the next tick draws the points now in view
    plot.refresh([(run, "#4a90d9")], "step", 0.0)
    xs, _ys = plot.curves[("long", "loss")].smooth.getData()
    assert xs[0] > 200 and xs[-1] < 800
    qtbot.keyClick(plot.plot, K.Key_Minus)
    lo2, hi2 = vb.viewRange()[0]
    assert hi2 - lo2 == pytest.approx((hi - lo) / 0.8)

    qtbot.keyClick(plot.plot, K.Key_0)  # as a double click: the whole run again
    assert tuple(vb.viewRange()[0]) == pytest.approx(whole)
    xs, _ys = plot.curves[("long", "loss")].smooth.getData()
    assert xs[0] == 1 and xs[-1] == 1000
    qtbot.keyClick(plot.plot, K.Key_Left)  # the arrows still step through the points
    assert plot.readout.full_text().startswith("step 999:")


def test_the_shortcuts_help_lists_the_plot_zoom_keys() -> None:
    from revstudio.qt.shortcuts_help import shortcuts_html

    assert "<b>+, -, 0</b>" in shortcuts_html({})
