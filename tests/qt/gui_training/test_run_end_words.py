"""What the window says once a very short run has ended (a 1-step run is a common first try)."""
from __future__ import annotations

from .conftest import START_TIMEOUT_MS


def test_a_one_step_run_ends_as_one_step(qtbot, train_window, fake_worker):
    """The status bar said "finished: 1 steps"."""
    fake_worker(delay=0.0)
    window = train_window({"steps": 1, "log_every": 1})
    ui = window.training
    assert ui.train() is None
    qtbot.waitUntil(lambda: not ui.controller.running, timeout=START_TIMEOUT_MS)
    assert ui.controller.run.status == "finished"
    assert ui.status_progress.label.text() == "finished: 1 step"
