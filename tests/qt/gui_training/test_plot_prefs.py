"""The Plots tab keeps its smoothing, x axis and each plot's log y from one session to the next."""
from __future__ import annotations

import math

from revstudio.qt.plots.panel import PlotsPanel
from revstudio.qt.plots.rows import RunData


def _noisy_run(steps: int = 300) -> RunData:
    run = RunData("noisy")
    run.feed({"kind": "event", "event": "started", "time": 0.0, "total_steps": steps, "task": "classification"})
    for s in range(1, steps + 1):
        run.feed({"kind": "step", "step": s, "epoch": s / 100, "time": s * 0.5,
                  "loss": 2.0 * math.exp(-s / 100) + (0.3 if s % 2 else 0.0)})
    return run


def test_smoothing_axis_and_log_y_come_back_in_a_new_session(qtbot):
    first = PlotsPanel()
    qtbot.addWidget(first)
    first.smooth_slider.setValue(93)
    first.axis_box.setCurrentIndex(first.axis_box.findData("time"))
    first.loss.log_box.setChecked(True)
    first.gradcheck.log_box.setChecked(False)  # on by default: turned off is remembered too

    again = PlotsPanel()  # a new window (the settings file is this test's own)
    qtbot.addWidget(again)
    assert again.smooth_slider.value() == 93
    assert again.smooth_label.text() == "0.93"
    assert again.axis == "time"
    assert again.loss.log_y and not again.gradcheck.log_y and not again.accuracy.log_y

    # and what they stand for is applied to the curves, not only shown on the controls
    run = _noisy_run()
    again.set_runs([run])
    assert run.series["loss"].weight == 0.93
    curve = again.loss.curves[("noisy", "loss")]
    xs, ys = curve.smooth.getData()
    assert xs[-1] == 150.0  # wall time of the last step, not its number
    raw_x, raw_y = curve.raw.getData()
    assert len(raw_x) == 300  # the raw curve stays, faint, behind the smoothed one
    assert max(ys) < 0.5  # log10 of the loss: about 2.3 at most, drawn as 0.36
    smooth_jumps = max(abs(b - a) for a, b in zip(ys[200:], ys[201:]))
    raw_jumps = max(abs(b - a) for a, b in zip(raw_y[200:], raw_y[201:]))
    assert smooth_jumps < raw_jumps / 5


def test_a_damaged_preference_falls_back_to_the_defaults(qtbot, isolated_settings):
    from PySide6.QtCore import QSettings

    s = QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "revstudio", "revstudio")
    s.setValue("plots/smoothing", "lots")
    s.setValue("plots/x_axis", "furlongs")
    s.setValue("plots/log_y/plot_loss", "maybe")
    s.sync()
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    assert panel.smooth_slider.value() == 60
    assert panel.axis == "step"
    assert not panel.loss.log_y and panel.gradcheck.log_y


def test_smoothing_goes_to_0_999_in_thousandths_above_0_99_and_is_kept(qtbot):
    """TensorBoard's slider goes to 0.999; this one stopped at 0.99 (100 rows of a 100,000-step run)."""
    first = PlotsPanel()
    qtbot.addWidget(first)
    first.smooth_slider.setValue(first.smooth_slider.maximum())
    assert first.weight == 0.999 and first.smooth_label.text() == "0.999"
    run = _noisy_run()
    first.set_runs([run])
    assert run.series["loss"].weight == 0.999
    steps = []
    for position in range(97, first.smooth_slider.maximum() + 1):
        first.smooth_slider.setValue(position)
        steps.append(first.weight)
    assert steps[:4] == [0.97, 0.98, 0.99, 0.991]  # hundredths, then thousandths near 1
    assert all(round(b - a, 6) == 0.001 for a, b in zip(steps[2:], steps[3:]))
    first.smooth_slider.setValue(first.smooth_slider.maximum() - 4)
    assert first.smooth_label.text() == "0.995"

    again = PlotsPanel()  # the next session
    qtbot.addWidget(again)
    assert again.weight == 0.995 and again.smooth_label.text() == "0.995"
    assert again.smooth_slider.value() == first.smooth_slider.value()
