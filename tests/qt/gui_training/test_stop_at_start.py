"""Stop pressed while the worker is still starting (importing torch), or one that ignores Stop.

A SIGTERM before the worker's handler is installed ends it at once with nothing
trained: that is no kill after a grace period, and a folder holding only the
snapshot Train wrote is no run to list (it showed as "failed: no readable status.json").
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

STARTING = "import time\ntime.sleep(60)\n"  # a worker still importing: SIGTERM's default action ends it
DEAF = ("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('{\"kind\": \"event\", \"event\": \"started\"}', flush=True)\ntime.sleep(60)\n")


def _worker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, source: str) -> None:
    import revstudio.qt.training.controller as controller

    script = tmp_path / "worker.py"
    script.write_text(source)
    monkeypatch.setattr(controller, "worker_argv", lambda snap, run_dir, resume=False: [sys.executable, str(script)])


def test_stop_while_the_worker_starts_is_no_kill_and_leaves_no_empty_run(qtbot, train_window, monkeypatch,
                                                                        tmp_path, dialogs):
    _worker(monkeypatch, tmp_path, STARTING)
    window = train_window()
    ui = window.training
    assert ui.train() is None
    run_dir = ui.controller.run_dir
    qtbot.waitUntil(lambda: ui.controller.process_id() != 0, timeout=10_000)
    assert ui.stop()
    qtbot.waitUntil(lambda: not ui.controller.running, timeout=5_000)
    run = ui.controller.run
    assert run.status == "stopped" and "grace period" not in (run.message or ""), run.message
    assert "before it trained" in run.message
    assert not run_dir.exists()  # it held only the snapshot
    ui.runs_panel.reload()
    assert ui.runs_panel.entry(run_dir) is None and not dialogs.errors


def _stopping_a_deaf_worker(qtbot, train_window, monkeypatch, tmp_path):
    """A window whose run (a worker that ignores SIGTERM) has started and been asked to stop."""
    _worker(monkeypatch, tmp_path, DEAF)
    window = train_window()
    ui = window.training
    assert ui.train() is None
    qtbot.waitUntil(lambda: ui.controller.run.rows > 0, timeout=20_000)
    assert ui.stop()
    return window, ui


def test_a_worker_deaf_to_stop_is_killed_after_the_grace_period(qtbot, train_window, monkeypatch, tmp_path):
    window, ui = _stopping_a_deaf_worker(qtbot, train_window, monkeypatch, tmp_path)
    qtbot.waitUntil(lambda: not ui.controller.running, timeout=5_000)
    assert ui.controller.run.status == "stopped" and "grace period" in ui.controller.run.message


def test_closing_while_a_stop_is_under_way_asks_nothing_more(qtbot, train_window, monkeypatch, tmp_path, dialogs):
    """Stop, then close at once: the window asked "A run is training: stop it and quit?" again."""
    window, ui = _stopping_a_deaf_worker(qtbot, train_window, monkeypatch, tmp_path)
    window.document.undo_stack.setClean()
    assert window.close()
    assert "stop_run" not in dialogs.asked and not ui.controller.running  # stopped (killed) on the way out


REFUSED = ("print('{\"kind\": \"event\", \"event\": \"failed\", \"time\": 0.0, \"step\": null, "
           "\"message\": \"/data/nosuch.npz: no such file\", \"exit_code\": 2}', flush=True)\nraise SystemExit(2)\n")


def test_a_run_the_worker_refuses_before_it_starts_leaves_no_run(qtbot, train_window, monkeypatch, tmp_path,
                                                                  dialogs):
    """A mistyped data path: the worker refuses and takes its files away; the snapshot Train wrote
    stayed, and the Runs tab listed a failed run at step 0 that never was."""
    _worker(monkeypatch, tmp_path, REFUSED)
    window = train_window()
    ui = window.training
    assert ui.train() is None
    run_dir = ui.controller.run_dir
    qtbot.waitUntil(lambda: not ui.controller.running, timeout=10_000)
    run = ui.controller.run
    assert run.status == "failed" and "nosuch.npz: no such file" in run.message
    assert dialogs.errors and "nosuch.npz" in dialogs.errors[-1][1]  # (still said, as before)
    assert not run_dir.exists()
    ui.runs_panel.reload()
    assert ui.runs_panel.entry(run_dir) is None


def _progress_lines(ui) -> list[str]:
    ui.update_progress()  # (as the timer and the run's end call it)
    return [ui.runs_panel.progress.label.text(), ui.status_progress.label.text()]


@pytest.mark.parametrize("source", [REFUSED, STARTING])
def test_the_progress_line_names_no_run_whose_folder_was_removed(qtbot, train_window, monkeypatch, tmp_path,
                                                                 dialogs, source):
    """A refused start (or one stopped while the worker started) removes its run folder, but the Runs
    tab's progress line and the status bar went on naming that run ("coupling-...: failed · step 0")."""
    _worker(monkeypatch, tmp_path, source)
    window = train_window()
    ui = window.training
    assert ui.train() is None
    run_dir = ui.controller.run_dir
    if source is STARTING:
        qtbot.waitUntil(lambda: ui.controller.process_id() != 0, timeout=10_000)
        assert ui.stop()
    qtbot.waitUntil(lambda: not ui.controller.running, timeout=10_000)
    assert not run_dir.exists()
    lines = _progress_lines(ui)
    assert not any(run_dir.name in line for line in lines), lines
    assert "No run training" in lines[0] and "Train (F5)" in lines[0], lines
    assert ("refused" if source is REFUSED else "stopped") in lines[0], lines
    assert not ui.status_progress.isVisibleTo(window) and ui.runs_panel.progress.bar.value() <= 0
    assert run_dir not in ui.runs_panel.live
    if source is REFUSED:  # the message and the dialog say what happened without naming the run that is gone
        said = [window.status_bar.currentMessage(), dialogs.errors[-1][1], ui.runs_panel.detail.toPlainText()]
        assert all("nosuch.npz" in text and run_dir.name not in text for text in said), said
