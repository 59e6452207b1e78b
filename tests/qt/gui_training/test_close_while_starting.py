"""Closing while a run is still starting: the question does not promise a checkpoint to resume.

At step 0 the dialog said "Stopping keeps its last checkpoint; Resume in the Runs tab continues it",
but a run stopped before its first step has no checkpoint (and its folder is removed).
"""
from __future__ import annotations

import sys
from pathlib import Path

STARTING = "import time\ntime.sleep(60)\n"  # a worker still importing torch


def _asked(window) -> list[str]:
    said: list[str] = []

    def ask(parent, detail: str) -> bool:
        said.append(detail)
        return False  # Cancel: the run goes on

    window.dialogs.ask_stop_run = ask
    assert not window.close()
    return said


def test_closing_while_the_run_starts_says_it_ends_with_nothing_to_resume(qtbot, train_window, monkeypatch,
                                                                         tmp_path: Path):
    import revstudio.qt.training.controller as controller

    script = tmp_path / "worker.py"
    script.write_text(STARTING)
    monkeypatch.setattr(controller, "worker_argv", lambda snap, run_dir, resume=False: [sys.executable, str(script)])
    window = train_window()
    ui = window.training
    assert ui.train() is None
    qtbot.waitUntil(lambda: ui.controller.process_id() != 0, timeout=10_000)
    (detail,) = _asked(window)
    assert "is still starting and has trained no step yet" in detail and "nothing to resume" in detail
    assert "checkpoint" not in detail and "Resume" not in detail
    assert ui.stop()
    qtbot.waitUntil(lambda: not ui.controller.running, timeout=10_000)


def test_closing_while_the_run_trains_still_names_its_checkpoint(qtbot, train_window, fake_worker):
    from .conftest import wait_running

    fake_worker(delay=0.05)
    window = train_window({"steps": 100_000})
    assert window.training.train() is None
    wait_running(qtbot, window)
    (detail,) = _asked(window)
    assert "Stopping keeps its last checkpoint" in detail and "is at step" in detail
    assert window.training.stop()
    qtbot.waitUntil(lambda: not window.training.controller.running, timeout=30_000)
