"""Runs trained before a project's first save move in with it (they vanished from the Runs tab:
an unsaved project's runs live in the app's data folder, a saved one's beside its file)."""
from __future__ import annotations

import errno
import os
import shutil

import pytest

from revstudio.qt.runs.run_dirs import is_run_dir, move_run_dir, renamed_run

from .conftest import EXAMPLE, START_TIMEOUT_MS, wait_running


@pytest.fixture
def appdata(tmp_path, monkeypatch):
    """The app's data folder for unsaved projects' runs, inside the test's own folder."""
    import revstudio.qt.training.adopt as adopt
    import revstudio.qt.training.controller as controller
    import revstudio.qt.training.ui as ui

    root, real = tmp_path / "appdata" / "runs", controller.runs_root
    for module in (adopt, controller, ui):
        monkeypatch.setattr(module, "runs_root", lambda path: real(path) if path else root)
    return root


def _unsaved_window(make_window, steps):
    from revstudio.qt.files import read_project

    graph = read_project(str(EXAMPLE))
    graph.name = "sketch"
    graph.training = {"steps": steps}
    return make_window(graph)


def test_runs_trained_before_the_first_save_move_in_with_the_project(qtbot, make_window, fake_worker, dialogs,
                                                                     appdata, tmp_path):
    fake_worker(delay=0.02)
    window = _unsaved_window(make_window, 3)
    training, ctl = window.training, window.training.controller
    assert training.train() is None
    qtbot.waitUntil(lambda: not ctl.running, timeout=START_TIMEOUT_MS)
    first = ctl.run_dir
    assert first.parent == appdata and first.name.startswith("sketch-")
    window.document.graph.training = {"steps": 100_000}
    assert training.train() is None
    wait_running(qtbot, window)
    second = ctl.run_dir

    project = tmp_path / "project" / "coupling.revs"
    project.parent.mkdir()
    dialogs.save_paths = [str(project)]
    assert window.files.save_as()
    runs = project.parent / "runs"
    moved = runs / renamed_run(first.name, "sketch", "coupling")
    assert moved.name.startswith("coupling-") and is_run_dir(moved) and not first.exists()
    assert [e.path for e in training.runs_panel.entries] == [moved]
    assert ctl.running and second.is_dir()  # the run still training stays where it writes
    training.update_progress()
    assert training.runs_panel.stale.isVisibleTo(training.runs_panel)
    assert "moves into" in training.runs_panel.stale.text()

    assert training.stop()
    qtbot.waitUntil(lambda: not ctl.running, timeout=START_TIMEOUT_MS)
    assert not second.exists() and ctl.run_dir.parent == runs and ctl.run.name == ctl.run_dir.name
    assert sorted(e.path for e in training.runs_panel.entries) == sorted([moved, ctl.run_dir])
    assert not [p for p in appdata.iterdir() if is_run_dir(p)]
    assert "stopped" == training.runs_panel.entry(ctl.run_dir).status
    # the moved run resumes from its new folder
    assert training.run_action("resume", [ctl.run_dir]) is None
    assert ctl.running and ctl.run_dir.parent == runs
    assert training.stop()
    qtbot.waitUntil(lambda: not ctl.running, timeout=START_TIMEOUT_MS)


def test_opening_another_project_moves_nothing(qtbot, make_window, fake_worker, dialogs, appdata, tmp_path):
    fake_worker(delay=0.01)
    window = _unsaved_window(make_window, 2)
    ctl = window.training.controller
    assert window.training.train() is None
    qtbot.waitUntil(lambda: not ctl.running, timeout=START_TIMEOUT_MS)
    first = ctl.run_dir
    other = tmp_path / "other" / "other.revs"
    other.parent.mkdir()
    shutil.copy(EXAMPLE, other)
    assert window.files.load_path(str(other))
    window.document.mark_saved(str(other))  # (a later save of that project)
    assert first.is_dir() and not (other.parent / "runs").exists()


def test_a_move_across_file_systems_copies_then_removes(tmp_path, monkeypatch):
    run = tmp_path / "a" / "sketch-20261206-143000"
    (run / "checkpoints").mkdir(parents=True)
    (run / "status.json").write_text("{}")
    (run / "checkpoints" / "last.pt").write_bytes(b"x" * 100)
    real = os.rename

    def rename(src, dst):
        if str(src) == str(run):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    root = tmp_path / "b" / "runs"
    (root / "coupling-20261206-143000").mkdir(parents=True)  # taken: the next free name
    target = move_run_dir(run, root, "coupling-20261206-143000")
    assert target.name == "coupling-20261206-143000-2" and not run.exists()
    assert (target / "checkpoints" / "last.pt").read_bytes() == b"x" * 100
    assert sorted(p.name for p in root.iterdir()) == ["coupling-20261206-143000", "coupling-20261206-143000-2"]


def test_a_move_that_fails_leaves_the_run_whole_and_no_part_behind(tmp_path, monkeypatch):
    run = tmp_path / "a" / "sketch-20261206-143000"
    run.mkdir(parents=True)
    (run / "status.json").write_text("{}")
    monkeypatch.setattr(os, "rename", lambda src, dst: (_ for _ in ()).throw(OSError(errno.EXDEV, "cross")))

    def full(src, dst, **kwargs):
        os.makedirs(dst)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shutil, "copytree", full)
    root = tmp_path / "b" / "runs"
    with pytest.raises(OSError, match="No space"):
        move_run_dir(run, root, "coupling-20261206-143000")
    assert (run / "status.json").exists() and [p.name for p in root.iterdir()] == [".gitignore"]  # (runs/'s own)


def test_run_names_follow_the_project_name() -> None:
    assert renamed_run("sketch-20261206-143000", "sketch", "coupling") == "coupling-20261206-143000"
    assert renamed_run("sketch-20261206-143000-2", "sketch", "coupling") == "coupling-20261206-143000-2"
    assert renamed_run("my-run", "sketch", "coupling") == "my-run"  # named by hand: kept


def test_the_progress_lines_name_a_finished_run_by_its_new_folder_after_the_first_save(
        qtbot, make_window, fake_worker, dialogs, appdata, tmp_path):
    """The first Save renamed the run's folder ("sketch-…" to "coupling-…") in the Runs table at once,
    but the progress line above it kept the old name until the next Open or New."""
    fake_worker(delay=0.01)
    window = _unsaved_window(make_window, 2)
    training, ctl = window.training, window.training.controller
    assert training.train() is None
    qtbot.waitUntil(lambda: ctl.run is not None and ctl.run.ended, timeout=START_TIMEOUT_MS)
    old = ctl.run_dir.name
    project = tmp_path / "project" / "coupling.revs"
    project.parent.mkdir()
    dialogs.save_paths = [str(project)]
    assert window.files.save_as()
    new = ctl.run_dir.name
    assert new.startswith("coupling-") and [e.path.name for e in training.runs_panel.entries] == [new]
    for line in (training.status_progress, training.runs_panel.progress):
        assert old not in line.label.text() + line.label.toolTip() + line.toolTip()
    assert new in training.runs_panel.progress.label.text()
