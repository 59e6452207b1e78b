"""What the window says once a very short run has ended (a 1-step run is a common first try)."""
from __future__ import annotations

import pytest


def test_a_one_step_run_ends_as_one_step(qtbot, fake_run):
    """The status bar said "finished: 1 steps"."""
    window = fake_run({"steps": 1, "log_every": 1})
    ui = window.training
    assert ui.controller.run.status == "finished"
    assert ui.status_progress.label.text() == "finished: 1 step"


@pytest.mark.parametrize("worker, status, log, plots", [
    # A finite loss of 1e4 and more finished as "finished: 20 steps" with no word of it.
    ({"diverge_at": 3}, "finished: 20 steps (the loss diverged: see Plots)", "the loss diverged: 5e+04 at step 3",
     "Step 3: the loss diverged"),
    # A run told it was not learning (shuffled labels, a tiny lr) finished as "finished: 20 steps".
    ({"stall_at": 5}, "finished: 20 steps (not learning: see Plots)", "the run is not learning: after 5 steps",
     "Step 5: the run is not learning"),
], ids=["diverged", "not-learning"])
def test_a_run_warned_of_says_so_in_the_status_plots_and_log(qtbot, fake_run, worker, status, log, plots):
    window = fake_run({"steps": 20, "log_every": 1}, **worker)
    ui = window.training
    run = ui.controller.run
    assert run.status == "finished" and run.warning is not None
    assert "learning rate (now 0.001)" in run.warning  # (the editor's words for --lr)
    assert ui.status_progress.label.text() == status
    assert log in window.bottom.log.toPlainText()
    ui.plots.set_runs([run])
    assert plots in ui.plots.warning.text()


def test_a_run_too_short_to_check_whether_it_learns_says_so_in_the_status_and_log(qtbot, fake_run):
    """A 20-step run was never checked for learning, and ended as "finished: 20 steps" as if it had been."""
    window = fake_run({"steps": 20, "log_every": 1}, short=True)
    ui = window.training
    run = ui.controller.run
    assert run.status == "finished" and run.warning is None
    assert run.note is not None and "steps 100" in run.note and "--steps" not in run.note  # (the editor's words)
    assert ui.status_progress.label.text() == "finished: 20 steps (too short to check that it learns: see Log)"
    assert "not checked whether the run learns: it ran 20 steps" in window.bottom.log.toPlainText()
