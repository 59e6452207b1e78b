"""The status bar's run progress belongs to the project that trained it (or to a run still going)."""
from __future__ import annotations

from .conftest import START_TIMEOUT_MS, wait_running


def test_a_finished_runs_progress_leaves_with_its_project(qtbot, fake_run):
    """New (or Open) after a run had ended kept "100 % finished: 12 steps" in the status bar of
    the empty project, whose Plots and Runs tabs said no run was shown."""
    window = fake_run()
    ui = window.training
    assert not ui.status_progress.isHidden()
    window.document.undo_stack.setClean()
    assert window.files.new_file()
    assert ui.status_progress.isHidden()
    # the Runs tab named the old run; "No run yet" would be untrue of a project with runs
    assert ui.runs_panel.progress.label.text() == "No run training: Train (F5) starts one"
    assert ui.runs_panel.progress.bar.value() < 0  # reset: no 100 %


def test_a_run_still_training_keeps_its_progress_in_another_project(qtbot, train_window, fake_worker):
    fake_worker(delay=0.05)
    window = train_window({"steps": 100_000, "log_every": 1})
    ui = window.training
    assert ui.train() is None
    wait_running(qtbot, window)
    window.document.undo_stack.setClean()
    assert window.files.new_file()
    assert not ui.status_progress.isHidden()  # the window's one run trains on: its progress stays
    qtbot.waitUntil(lambda: ui.runs_panel.progress.label.text().startswith(ui.controller.run.name),
                    timeout=START_TIMEOUT_MS)
    assert ui.stop()
    qtbot.waitUntil(lambda: not ui.controller.running, timeout=START_TIMEOUT_MS)
