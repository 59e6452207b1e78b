"""File > New Window (Ctrl+Shift+N) and Open in New Window…: a second project at once, from the app.

Before, a window held one project and File > Open replaced it: working on two projects (copying nodes
from one into the other) meant starting revstudio again from a terminal.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

from revstudio import __version__
from revstudio.qt import new_window


def _capture(monkeypatch, works: bool = True) -> list[list[str]]:
    started: list[list[str]] = []
    monkeypatch.setattr(new_window, "_start", lambda argv: started.append(argv) or works)
    return started


def test_new_window_starts_another_editor_and_keeps_this_project(make_window, revnet, monkeypatch):
    started = _capture(monkeypatch)
    window = make_window(revnet, "/tmp/somewhere/doc.revs")
    action = window.actions_by_name["new_window"]
    assert action.shortcut().toString() == "Ctrl+Shift+N"
    assert action in window.menuBar().actions()[0].menu().actions()  # in the File menu
    action.trigger()
    assert started == [[sys.executable, "-P", "-m", "revstudio"]]
    assert window.document.path == "/tmp/somewhere/doc.revs" and "f" in window.document.graph.nodes
    assert "Opening a new window" in window.status_bar.currentMessage()


def test_open_in_new_window_asks_for_a_file_and_opens_it_in_another_editor(
        make_window, revnet, dialogs, monkeypatch, tmp_path):
    started = _capture(monkeypatch)
    window = make_window(revnet)
    dialogs.open_paths.append(str(tmp_path / "other.revs"))
    window.actions_by_name["open_in_new_window"].trigger()
    assert dialogs.asked == ["open"]
    assert started == [[sys.executable, "-P", "-m", "revstudio", str(tmp_path / "other.revs")]]
    assert window.document.graph is not None and "f" in window.document.graph.nodes  # this one stays
    window.actions_by_name["open_in_new_window"].trigger()  # cancelled: nothing starts
    assert len(started) == 1


def test_a_window_that_cannot_start_is_said_in_the_status_bar(make_window, monkeypatch):
    _capture(monkeypatch, works=False)
    window = make_window()
    window.actions_by_name["new_window"].trigger()
    assert "Could not open a new window" in window.status_bar.currentMessage()


def test_the_new_windows_command_runs_revstudio_from_the_home_folder(tmp_path, monkeypatch):
    # the argv is a revstudio command: with --version it answers and exits
    out = subprocess.run([*new_window.editor_argv(None), "--version"], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert out.returncode == 0 and __version__ in out.stdout
    # the real start is detached, from the home folder (which outlives this window)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    mark = tmp_path / "started"
    assert new_window._start([sys.executable, "-c", f"import os; open({str(mark)!r}, 'w').write("
                              f"os.getcwd() + ' ' + os.environ.get({new_window.NEW_WINDOW!r}, '-'))"])
    deadline = time.monotonic() + 60
    while not (mark.exists() and mark.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.read_text() == f"{home} 1"


def test_a_new_window_starts_empty_even_where_preferences_reopen_the_last_project(
        make_window, revnet_on_disk, qtbot, monkeypatch):
    # with "Reopen the last project" on, New Window opened this window's project a second time
    path = revnet_on_disk()
    first = make_window()
    first.settings.reopen_last = True
    first.files.load_path(path)
    monkeypatch.setenv(new_window.NEW_WINDOW, "1")  # what New Window gives the editor it starts
    new_window.started_by_new_window.cache_clear()
    fresh = make_window()
    opened: list[bool] = []
    fresh.opened.connect(lambda: opened.append(True))
    fresh.open_later(None)
    qtbot.waitUntil(lambda: bool(opened), timeout=30_000)
    assert fresh.document.path is None and not fresh.document.graph.nodes
    assert new_window.NEW_WINDOW not in os.environ  # read once: not handed on to its own children
    new_window.started_by_new_window.cache_clear()
    again = make_window()  # a start from the desktop still reopens it
    again.open_later(None)
    qtbot.waitUntil(lambda: again.document.path == path, timeout=30_000)


def test_a_new_window_stands_a_step_below_and_right_of_where_the_layout_puts_it(make_window):
    window = make_window()
    window.resize(300, 200)  # (the offscreen screen is small)
    window.move(100, 80)
    new_window.cascade(window)
    window.fit_to_screen()
    assert (window.x(), window.y()) == (100 + new_window.CASCADE, 80 + new_window.CASCADE)


def test_a_frozen_app_starts_itself_for_a_new_window(make_window, dialogs, monkeypatch, tmp_path):
    # a PyInstaller build has no Python to run "-m revstudio" with: sys.executable is the app, and
    # New Window started "<app> -P -m revstudio", which the app read as a file named "-P"; it starts
    # "<app> --run-module revstudio FILE", which the app runs as "python -P -m revstudio FILE" would
    app = tmp_path / "revstudio"
    mark = tmp_path / "argv"
    app.write_text(f'#!/bin/sh\necho "$# $*" > {mark}\n')
    app.chmod(0o755)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(app))
    assert new_window.editor_argv(None) == [str(app), "--run-module", "revstudio"]
    window = make_window()
    dialogs.open_paths.append(str(tmp_path / "other.revs"))
    window.actions_by_name["open_in_new_window"].trigger()  # the real, detached start
    deadline = time.monotonic() + 60
    while not (mark.exists() and mark.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.read_text() == f"3 --run-module revstudio {tmp_path / 'other.revs'}\n"
