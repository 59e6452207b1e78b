"""Train in the app makes the project's runs/ folder as `revstudio train` does: with the
.gitignore that keeps a team's git repository free of run folders (tests/training/test_runs_gitignore.py)."""
from __future__ import annotations

from pathlib import Path

from revstudio.qt.runs.run_dirs import move_run_dir
from revstudio.training.runs_folder import GITIGNORE_TEXT


def test_train_makes_runs_beside_the_project_with_its_gitignore(fake_run) -> None:
    window = fake_run()
    runs = Path(window.document.path).parent / "runs"
    assert window.training.controller.run_dir.parent == runs
    assert (runs / ".gitignore").read_text() == GITIGNORE_TEXT


def test_runs_moved_beside_a_first_saved_project_get_the_gitignore_too(tmp_path) -> None:
    run = tmp_path / "appdata" / "sketch-20260101-000000"
    run.mkdir(parents=True)
    (run / "status.json").write_text("{}")
    runs = tmp_path / "project" / "runs"
    moved = move_run_dir(run, runs, "coupling-20260101-000000")
    assert (moved / "status.json").is_file() and (runs / ".gitignore").read_text() == GITIGNORE_TEXT
