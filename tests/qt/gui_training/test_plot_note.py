"""The memory plot's "peak N % of standard's" stays readable however narrow the plot is."""
from __future__ import annotations

import math

from revstudio.qt.plots.fitted_label import FittedLabel
from revstudio.qt.plots.panel import PlotsPanel
from revstudio.qt.plots.rows import RunData

from .test_runs_and_plots import synthetic_run


def _fits(label) -> bool:
    return label.fontMetrics().horizontalAdvance(label.text()) <= label.width()


def _shown_panel(qtbot, width: int = 700, height: int = 520) -> PlotsPanel:
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    panel.resize(width, height)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def test_the_note_keeps_its_whole_sentence_in_a_narrow_window(qtbot):
    panel = _shown_panel(qtbot)  # 700 px: three plots a row, each about 230 px wide
    panel.set_runs([synthetic_run()])
    qtbot.wait(50)
    note = panel.memory.note
    assert note.text() == "peak 29 % of standard's" and note.isVisible() and _fits(note)
    assert "standard mode" in note.toolTip() and note.full_text() in note.toolTip()
    # the reference lines' labels are short enough for the plot too
    labels = [line.label.toPlainText() for line in panel._memory_refs]
    assert labels == ["est. reversible 2.9 MiB", "est. standard 9.5 MiB"]
    # under a memory budget the run's estimate counts the steps the budget keeps, and says so
    budgeted = synthetic_run(name="budgeted")
    budgeted.info["config"] = {**budgeted.info["config"], "memory_budget": 4 << 20}
    panel.set_runs([budgeted])
    qtbot.wait(50)
    assert panel._memory_refs[0].label.toPlainText() == "est. reversible+budget 2.9 MiB"


def test_a_fitted_label_shortens_then_elides(qtbot):
    label = FittedLabel()
    qtbot.addWidget(label)
    label.set_texts(["peak 29 % of standard's", "29 % of standard's", "29 % of std.", "29 %"])
    label.show()
    metrics = label.fontMetrics()
    for text in ("peak 29 % of standard's", "29 % of standard's", "29 % of std.", "29 %"):
        label.resize(metrics.horizontalAdvance(text) + 1, 20)
        qtbot.wait(1)
        assert label.text() == text
    label.resize(metrics.horizontalAdvance("29") , 20)
    assert label.text().endswith("…") and _fits(label)
    assert label.full_text() == "peak 29 % of standard's"
    label.set_texts([])
    assert label.text() == ""


def _shown(qtbot) -> PlotsPanel:
    """A plots panel on screen with the synthetic run drawn."""
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 520)
    panel.show()
    qtbot.waitExposed(panel)
    panel.set_runs([synthetic_run()])
    qtbot.wait(50)
    return panel


def test_the_memory_axis_is_in_the_lines_binary_units(qtbot):
    """The axis and the lines' labels say the same unit: the 2.9 MiB line sits at 2.9 on it."""
    panel = _shown(qtbot)
    axis = panel.memory.plot.getAxis("left")
    assert axis.labelString().split(">")[1].startswith("peak (MiB)"), axis.labelString()
    line = panel._memory_refs[0]
    assert line.label.toPlainText() == "est. reversible 2.9 MiB"
    assert abs(line.value() * axis.scale - 2.9) < 0.05  # the line's position read in the axis' unit
    ticks = [v * axis.scale for _, values in axis.tickValues(*axis.range, 300) for v in values]
    assert ticks and all(abs(v * 10 - round(v * 10)) < 1e-6 for v in ticks)  # round MiB


def test_the_gradient_check_band_is_drawn_only_where_there_are_checks(qtbot):
    """A run without gradient checks gets an empty plot that says why, not one the red band fills."""
    from revstudio.qt.plots.rows import RunData

    panel = _shown(qtbot)
    assert panel._band.isVisible() and panel.gradcheck.note.text() == ""
    for config, regions, said in (({"gradcheck_every": 0}, ["r0"], "gradient checks are off in this run"),
                                  ({}, ["r0"], "no gradient check yet"),
                                  ({}, [], "no reversible region to check")):
        run = RunData("unchecked")
        run.feed({"kind": "event", "event": "started", "time": 0.0, "mode": "reversible", "regions": regions,
                  "config": {"precision": "fp32", **config}, "total_steps": 10})
        for s in range(1, 11):
            run.feed({"kind": "step", "step": s, "epoch": s / 10, "time": s * 0.01, "loss": 1.0 / s})
        panel.set_runs([run])
        qtbot.wait(50)
        assert not panel._band.isVisible()
        assert panel.gradcheck.note.full_text().startswith(said), panel.gradcheck.note.full_text()


def test_a_run_that_ended_before_its_first_check_does_not_say_yet(qtbot):
    """A 3-step run with the default check every 100 steps said "no gradient check yet" once it
    had finished: no check was coming. It says the run had none, and why."""
    from revstudio.qt.plots.rows import RunData

    panel = _shown(qtbot)
    run = RunData("short")
    run.feed({"kind": "event", "event": "started", "time": 0.0, "mode": "reversible", "regions": ["r0"],
              "config": {"precision": "fp32", "gradcheck_every": 100}, "total_steps": 3})
    for s in range(1, 4):
        run.feed({"kind": "step", "step": s, "epoch": s / 10, "time": s * 0.01, "loss": 1.0 / s})
    panel.set_runs([run])
    qtbot.wait(50)
    assert panel.gradcheck.note.full_text() == "no gradient check yet"  # while it runs, one may come
    run.feed({"kind": "event", "event": "finished", "step": 3, "time": 0.1, "metrics": {}})
    panel.refresh(force=True)
    qtbot.wait(50)
    said = panel.gradcheck.note.full_text()
    assert "yet" not in said and said.startswith("no gradient check in this run") and "every 100 steps" in said

def test_a_mixed_precision_run_says_why_it_has_no_estimate_lines(qtbot):
    """The estimate models fp32 steps: under bf16 autocast no fp32 line is drawn as the run's, and
    the note where "peak N % of standard's" would be says there is no estimate, the tooltip why."""
    from revstudio.training.estimates import estimate_note

    panel = _shown_panel(qtbot)
    run = synthetic_run(name="bf16")
    run.info.update(estimate_bytes=None, standard_estimate_bytes=None, estimate_note=estimate_note("bf16"),
                    config={**run.info["config"], "precision": "bf16"})
    panel.set_runs([run])
    qtbot.wait(50)
    note = panel.memory.note
    assert note.full_text() == "no estimate under bf16" and note.isVisible() and _fits(note)
    assert "fp32 steps only" in note.toolTip() and note.toolTip()[0].isupper()
    assert not any(line.isVisible() for line in panel._memory_refs)
    # and back to an fp32 run: its lines and its fraction again
    panel.set_runs([synthetic_run()])
    qtbot.wait(50)
    assert note.text() == "peak 29 % of standard's" and all(line.isVisible() for line in panel._memory_refs)


def test_a_flat_measured_peak_is_framed_around_its_value(qtbot):
    """A run's measured peak is the same bytes at every step; without estimate lines to frame it
    (a bf16 run), its smoothed copy's last-bit wobble set a range 1e-8 bytes wide: no tick labels
    and a jagged line. It is framed around the value instead."""
    panel = _shown_panel(qtbot, 900)
    run = synthetic_run(name="flat")
    run.info.update(estimate_bytes=None, standard_estimate_bytes=None)
    panel.set_runs([run])
    panel.refresh(force=True)
    lo, hi = panel.memory.plot.getPlotItem().getViewBox().viewRange()[1]
    assert lo < 2_900_000 < hi and hi - lo >= 0.1 * 2_900_000


def test_showing_the_plots_tab_grows_a_short_output_panel(qtbot, train_window):
    """In the default 200 px panel five plots got ~60 px each: axes over their labels and
    'no gradient check yet' over the ticks. Plots, like Code and Memory, gets room when shown."""
    window = train_window({"steps": 10})
    window.resize(1400, 880)
    qtbot.wait(100)
    assert window.bottom_dock.height() < 300
    window.training.show_tab("Plots")
    qtbot.wait(100)
    assert window.bottom_dock.height() >= 300


def test_the_plots_are_never_squeezed_under_their_axes(qtbot, train_window):
    """Shown in a 880 px window the Plots grid got 325 px of the 370 it needs: each plot was cut
    off under its x axis's title ("step" half drawn) and its top label. The Output panel grows to
    fit them where the window has room, and scrolls them where it has not."""
    window = train_window({"steps": 10})
    for height in (880, 560):
        window.resize(1400, height)
        qtbot.wait(100)
        window.training.show_tab("Problems")
        window.training.show_tab("Plots")
        qtbot.wait(100)
        for plot in window.training.plots.plots:
            assert plot.height() >= plot.minimumSizeHint().height(), (height, plot.title_text, plot.height())
    assert window.bottom_dock.height() <= 0.5 * window.height() + 1  # the canvas keeps its share


def test_the_top_estimate_line_keeps_its_label_inside_the_plot(qtbot):
    """The frame left a quarter of the span above the standard estimate's line; its label, drawn
    above the line, was cut in half by the plot's top edge in a plot of ordinary height."""
    panel = _shown_panel(qtbot, 900, 340)
    run = synthetic_run()
    panel.set_runs([run])
    panel.refresh(force=True)
    qtbot.wait(50)
    vb = panel.memory.plot.getPlotItem().getViewBox()
    top = vb.sceneBoundingRect().top()
    for line in panel._memory_refs:
        assert line.label.sceneBoundingRect().top() >= top - 0.5, (line.label.toPlainText(), top)


def test_an_empty_log_plot_shows_decades_then_frames_its_first_values(qtbot):
    """Before any check the gradient-check plot (log y) kept pyqtgraph's default 1..10, whose
    minor ticks were all labelled on top of each other ("8 6 5 4 3 2")."""
    from revstudio.qt.plots.rows import RunData

    panel = _shown_panel(qtbot, 900, 400)
    run = RunData("fresh")
    run.feed({"kind": "event", "event": "started", "time": 0.0, "mode": "reversible", "regions": ["r0"],
              "config": {"precision": "fp32", "gradcheck_every": 4}, "total_steps": 8})
    run.feed({"kind": "step", "step": 1, "epoch": 0.1, "time": 0.01, "loss": 1.0})
    panel.set_runs([run])
    panel.refresh(force=True)
    vb = panel.gradcheck.plot.getPlotItem().getViewBox()
    lo, hi = vb.viewRange()[1]
    assert lo <= -11 and hi >= -0.1  # 1e-12 .. 1: whole decades labelled
    run.feed({"kind": "gradcheck", "step": 4, "epoch": 0.4, "time": 0.04,
              "regions": [{"region": "r0", "grad_rel_error": 3e-7, "inversion_error": 2e-8}]})
    panel.refresh(force=True)
    lo, hi = vb.viewRange()[1]
    assert lo <= math.log10(2e-8) < math.log10(3e-7) <= hi and hi - lo < 6  # framed on the values
    panel.set_runs([])
    panel.gradcheck.set_log_y(False)  # empty and linear again: pyqtgraph's own range, not the decades
    panel.refresh(force=True)
    assert vb.autoRangeEnabled()[1]


def test_a_flows_loss_axis_says_bits_per_dim(qtbot):
    panel = _shown_panel(qtbot)
    flow = synthetic_run(steps=20, name="flow")
    flow.info["task"] = "flow"
    panel.set_runs([flow])
    assert panel.loss.plot.getAxis("left").labelText == "bits/dim"
    other = synthetic_run(steps=20, name="classifier")
    other.info["task"] = "classification"
    panel.set_runs([flow, other])  # overlaid with another task's run: no one unit
    assert panel.loss.plot.getAxis("left").labelText == "loss"


def test_a_plot_with_no_curve_shows_no_empty_legend(qtbot):
    panel = _shown_panel(qtbot)
    flow = synthetic_run(steps=20, name="flow")
    run = RunData("flow")  # a flow's rows: a loss, no accuracy
    run.feed({"kind": "event", "event": "started", "time": 0.0, "mode": "reversible", "task": "flow",
              "total_steps": 5, "regions": [], "config": {"precision": "fp32"}})
    for s in range(1, 6):
        run.feed({"kind": "step", "step": s, "epoch": s / 10, "time": s * 0.01, "loss": 8.0 - s,
                  "samples_per_s": 800.0})
    panel.set_runs([run])
    assert panel.loss.curves and not panel.accuracy.curves
    assert not panel.accuracy.plot.getPlotItem().legend.isVisible()
    panel.set_runs([flow, synthetic_run(steps=20, name="other")])  # two runs' accuracy curves bring it back
    assert len(panel.accuracy.curves) == 2 and panel.accuracy.plot.getPlotItem().legend.isVisible()


def test_the_accuracy_plot_of_a_flow_says_why_it_is_empty(qtbot):
    """A flow (or regression) run has no accuracy: its Accuracy plot stood empty, with nothing to say why."""
    panel = _shown_panel(qtbot)
    flow = synthetic_run(steps=20, name="flow")
    flow.info["task"] = "flow"
    panel.set_runs([flow])
    note = panel.accuracy_note
    assert note.isVisible() and "flow" in note.toPlainText() and "Loss" in note.toPlainText()
    classifier = synthetic_run(steps=20, name="classifier")
    classifier.info["task"] = "classification"
    panel.set_runs([flow, classifier])  # one run has accuracy: the plot is not empty
    assert not note.isVisible()
    panel.set_runs([])
    assert not note.isVisible()
