"""The Runs tab's actions, a failed run's message, the plot tools and the diagnostics drawn.

Runs here come from the contract-row script (``fake_worker``) where the real
worker cannot be made to fail on cue, and to keep two runs quick.
"""
from __future__ import annotations

import csv
import json
import math

import pytest

from revstudio.qt.plots.diagnostic_plots import DiagnosticsDialog, gradcheck_bars, memory_bars
from revstudio.qt.plots.panel import PlotsPanel
from revstudio.qt.plots.rows import GRAD_PREFIX, RunData
from revstudio.qt.training.compare_dialog import CompareDialog


def run_to_end(qtbot, window):
    ctl = window.training.controller
    assert window.training.train() is None
    qtbot.waitUntil(lambda: not ctl.running, timeout=60_000)
    return ctl.run, ctl.run_dir


def test_a_failed_run_shows_its_message_and_stderr_and_the_app_keeps_working(qtbot, train_window, fake_worker,
                                                                             dialogs):
    fake_worker(fail_at=5)
    window = train_window({"steps": 40})
    run, run_dir = run_to_end(qtbot, window)
    assert run.status == "failed" and run.message == "fake failure at this step"
    title, text = dialogs.errors[-1]
    assert title == "Training failed" and "fake failure at this step" in text
    assert "ValueError: fake failure" in text  # the last lines of its stderr
    assert "ValueError: fake failure" in window.training.runs_panel.detail.toPlainText()
    assert window.training.controller.refusal() is None  # a new run may start


def test_runs_overlay_compare_open_and_delete(qtbot, train_window, fake_worker, dialogs):
    fake_worker()
    window = train_window({"steps": 30})
    first, first_dir = run_to_end(qtbot, window)
    from revstudio.core.commands import SetTraining

    window.document.push(SetTraining(window.document.graph, {"steps": 20, "lr": 0.01}))
    second, second_dir = run_to_end(qtbot, window)
    panel = window.training.runs_panel
    panel.reload()
    assert {panel.table.item(i, 0).text() for i in range(panel.table.rowCount())} == {first_dir.name,
                                                                                    second_dir.name}
    # select both: their curves overlaid in the Plots tab, one colour per run
    panel.select_paths([first_dir, second_dir])
    plots = window.training.plots
    plots.refresh(force=True)
    names = {run for run, _series in plots.loss.curve_points()}
    assert names == {first_dir.name, second_dir.name}
    assert plots.loss.curve_points()[(first_dir.name, "loss")] == 30
    assert plots.loss.curve_points()[(second_dir.name, "loss")] == 20
    assert "2 runs overlaid" in plots.shown_label.text()

    # compare the first run's settings with the current project's
    panel.select_paths([first_dir])
    dialog = window.training.run_action("compare", panel.selected_paths())
    assert isinstance(dialog, CompareDialog) and "lr" in dialog.changed
    # open its snapshot in a read-only tab: the project as that run trained it (tests/.../test_snapshot_tab.py)
    view = window.training.run_action("open", [first_dir])
    assert view.document.path is None and first_dir.name in window.tabs.tabText(window.tabs.indexOf(view))
    assert set(view.graph.nodes) == set(window.document.graph.nodes)

    # delete asks first; No keeps the folder, Yes removes it
    dialogs.confirms = [False, True]
    assert window.training.run_action("delete", [first_dir]) is False and first_dir.exists()
    assert window.training.run_action("delete", [first_dir]) is True and not first_dir.exists()
    assert panel.table.rowCount() == 1
    assert any(a.startswith("confirm:") for a in dialogs.asked)


def synthetic_run(steps=500, grad=1e-7, name="demo"):
    run = RunData(name)
    run.feed({"kind": "event", "event": "started", "time": 0.0, "mode": "reversible", "estimate_bytes": 3_000_000,
              "standard_estimate_bytes": 10_000_000, "total_steps": steps, "regions": ["r0"],
              "config": {"precision": "fp32"}})
    for s in range(1, steps + 1):
        run.feed({"kind": "step", "step": s, "epoch": s / 100, "time": s * 0.01, "loss": 1 / math.sqrt(s),
                  "accuracy": 0.5, "samples_per_s": 800.0, "peak_bytes": 2_900_000})
        if s % 50 == 0:
            run.feed({"kind": "gradcheck", "step": s, "epoch": s / 100, "time": s * 0.01,
                      "regions": [{"region": "r0", "grad_rel_error": grad, "inversion_error": 0.0}]})
    return run


def test_plot_tools_smoothing_axis_log_hover_and_export(qtbot, tmp_path):
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    panel.resize(1200, 600)
    panel.show()
    run = synthetic_run()
    panel.set_runs([run])
    loss = run.series["loss"]
    panel.smooth_slider.setValue(0)
    assert (loss.column("smooth") == loss.column("value")).all()
    panel.smooth_slider.setValue(90)
    assert loss.weight == pytest.approx(0.9) and loss.column("smooth")[-1] > loss.column("value")[-1]
    curve = panel.loss.curves[("demo", "loss")]
    assert curve.raw.xData is not None and len(curve.raw.xData) == 500  # the raw curve stays, faint
    assert curve.raw.opts["pen"].color().alpha() < 100
    panel.axis_box.setCurrentIndex(panel.axis_box.findData("epoch"))
    assert curve.smooth.xData[-1] == pytest.approx(5.0)
    assert panel.loss.describe_at(2.5).startswith("epoch 2.5:  loss 0.06325")
    panel.loss.set_log_y(True)
    assert panel.loss.plot.getPlotItem().ctrl.logYCheck.isChecked()
    assert panel.memory.note.text() == "peak 29 % of standard's"
    assert not panel.warning.isVisibleTo(panel)
    rows = panel.loss.export_csv(str(tmp_path / "loss.csv"))
    with open(tmp_path / "loss.csv") as fh:
        table = list(csv.reader(fh))
    assert rows == 500 and table[0] == ["run", "series", "step", "epoch", "time", "value", "smoothed"]
    assert table[1][:3] == ["demo", "loss", "1.0"]
    panel.loss.export_png(str(tmp_path / "loss.png"))
    assert (tmp_path / "loss.png").stat().st_size > 1000
    # a region whose gradients leave the band gets a sentence in plain words
    panel.set_runs([synthetic_run(grad=3e-3, name="bad")])
    assert panel.warning.isVisibleTo(panel)
    assert "Region r0" in panel.warning.text() and "disagree" in panel.warning.text()
    assert panel.gradcheck.curve_points()[("bad", GRAD_PREFIX + "r0")] == 10


def test_memory_and_gradcheck_results_are_drawn(qtbot):
    memory = {"batch": 8, "device": "cpu", "measured_with": "live tensor accounting",
              "modes": {"standard": {"peak_bytes": 1000}, "reversible": {"peak_bytes": 290},
                        "checkpoint": {"peak_bytes": 500}},
              "estimate": {"modes": {"standard": {"activation_bytes": 900}, "reversible": {"activation_bytes": 300}}}}
    assert memory_bars(memory) == (["standard", "checkpoint", "reversible"], [1000.0, 500.0, 290.0],
                                   [900.0, None, 300.0])
    dialog = DiagnosticsDialog("Memory", "memory", memory)
    qtbot.addWidget(dialog)
    assert "reversible: peak 290 B, 29 % of standard's" in dialog.summary.text()
    grad = {"ok": True, "mode": "reversible", "dtype": "float64", "batch": 2, "tolerance": 1e-10, "max_error": 1e-17,
            "parameters": {"f.weight": {"error": 1e-17}, "f.bias": {"error": 0.0}},
            "inputs": {"x": {"error": 2e-18}}, "outputs": {"output logits": {"error": 3e-19}},
            "inversion_error": {"r0": 1e-16}, "max_inversion_error": 1e-16}
    bars = gradcheck_bars(grad)
    assert bars[0] == ("inversion r0", 1e-16) and bars[1] == ("parameter f.weight", 1e-17) and len(bars) == 5
    assert ("input x", 2e-18) in bars and ("output logits", 3e-19) in bars  # ("output output logits")
    dialog = DiagnosticsDialog("Gradient check", "gradcheck", grad)
    qtbot.addWidget(dialog)
    assert "gradients agree" in dialog.summary.text()


def test_gradient_check_of_the_drawn_project_runs_in_a_child(qtbot, train_window):
    window = train_window()
    query = window.training.gradcheck_project()
    qtbot.waitUntil(lambda: query.answer is not None, timeout=180_000)
    assert query.answer.get("ok") is True, json.dumps(query.answer)[:500]
    dialog = window.training.dialogs[-1]
    assert isinstance(dialog, DiagnosticsDialog) and dialog.plot is not None
    assert "agree" in dialog.summary.text()


def test_run_details_read_as_the_app_writes_them():
    from revstudio.qt.runs.compare_runs import setting_text
    from revstudio.qt.training.words import in_app_words

    assert setting_text("memory_budget", 786432) == "768KiB (786,432 bytes)"  # as Run Settings shows it
    assert setting_text("memory_budget", 1000001) == "1000001" and setting_text("lr", 0.01) == "0.01"
    assert in_app_words("stopped by a signal; --resume continues it") == "stopped by a signal; Resume continues it"


def test_opening_another_project_shows_its_runs_and_plots(qtbot, train_window, fake_worker, tmp_path):
    # projects in one folder share its runs folder: opening b.revs kept listing (and plotting) a's runs
    import shutil

    fake_worker()
    window = train_window({"steps": 5})
    _run, a_dir = run_to_end(qtbot, window)
    a_path = window.document.path
    b_path = str(tmp_path / "project" / "b.revs")
    shutil.copy(a_path, b_path)
    panel = window.training.runs_panel
    panel.select_paths([a_dir])
    assert [r.name for r in window.training.shown_runs()] == [a_dir.name]

    assert window.files.load_path(b_path)
    assert panel.table.rowCount() == 0  # b has no runs yet; a's are a's
    assert window.training.shown_runs() == [] and window.training.selected == []
    window.training.plots.refresh(force=True)
    assert window.training.plots.loss.curve_points() == {}
    _run, b_dir = run_to_end(qtbot, window)
    panel.reload()
    assert [panel.table.item(i, 0).text() for i in range(panel.table.rowCount())] == [b_dir.name]

    assert window.files.load_path(a_path)  # and back: a's runs, b's gone
    assert [panel.table.item(i, 0).text() for i in range(panel.table.rowCount())] == [a_dir.name]
    assert window.training.shown_runs() == []


def test_a_run_still_training_stays_in_plots_after_opening_another_project(qtbot, train_window, fake_worker,
                                                                           tmp_path):
    import shutil

    from .conftest import wait_running

    fake_worker(delay=0.05)
    window = train_window({"steps": 100_000})
    assert window.training.train() is None
    run = wait_running(qtbot, window)
    b_path = str(tmp_path / "project" / "b.revs")
    shutil.copy(window.document.path, b_path)
    assert window.files.load_path(b_path)
    assert window.training.runs_panel.table.rowCount() == 0
    window.training.update_progress()
    stale = window.training.runs_panel.stale
    assert stale.isVisibleTo(window.training.runs_panel) and "belongs to another project" in stale.text()
    assert window.training.shown_runs() == [run]  # still training: still plotted, and Stop still stops it
    window.training.plots.refresh(force=True)
    assert window.training.plots.loss.curve_points()
    assert window.training.stop()
    qtbot.waitUntil(lambda: not window.training.controller.running, timeout=30_000)
    assert window.training.shown_runs() == []  # over, and another project's
    window.training.plots.refresh(force=True)
    assert window.training.plots.loss.curve_points() == {}


def test_closing_while_a_run_trains_asks_first_then_about_unsaved_edits(qtbot, train_window, fake_worker,
                                                                        dialogs):
    # closing stopped the run without asking
    from revstudio.core.commands import SetParam

    from .conftest import wait_running

    fake_worker(delay=0.05)
    window = train_window({"steps": 100_000})
    assert window.training.train() is None
    wait_running(qtbot, window)
    ctl = window.training.controller
    window.document.push(SetParam(window.document.graph, "head", "out_features", 9))  # unsaved edits too

    dialogs.stop_runs = [False]  # Cancel: nothing more is asked, the run goes on
    assert not window.close()
    assert dialogs.asked == ["stop_run"] and ctl.running and window.isVisible()

    dialogs.asked.clear()
    dialogs.stop_runs, dialogs.unsaved = [True], ["cancel"]  # Stop and Quit, then Cancel on the edits
    assert not window.close()
    assert dialogs.asked == ["stop_run", f"unsaved:{window.files.display_name()}"] and ctl.running

    dialogs.asked.clear()
    dialogs.stop_runs, dialogs.unsaved = [True], ["discard"]
    process = ctl._process
    assert window.close()
    assert dialogs.asked == ["stop_run", f"unsaved:{window.files.display_name()}"]
    assert not ctl.running and process.state() == process.ProcessState.NotRunning


def test_closing_with_no_run_training_asks_nothing_about_runs(qtbot, train_window, dialogs):
    window = train_window()
    assert window.close()
    assert "stop_run" not in dialogs.asked
