"""The runs/ folder revstudio makes beside a project keeps itself out of git.

A team keeping its projects in git found `git status` listing every run folder (checkpoints of
megabytes, a snapshot with this machine's absolute data paths) after its first Train, with no hint
whether they belonged in the repository.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from training_kit import linear_classifier

from revstudio import cli
from revstudio.core.project import save
from revstudio.training.runs_folder import GITIGNORE_TEXT

FLAGS = ["--batch-size", "8", "--device", "cpu", "--steps", "1", "--val-every", "0", "--gradcheck-every", "0",
         "--memory-every", "0"]


def _project(folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "clf.revs"
    save(linear_classifier(), path)
    return str(path)


def test_the_first_run_makes_runs_with_a_gitignore_that_ignores_it_all(tmp_path, capsys) -> None:
    project = _project(tmp_path / "team repo")
    assert cli.main(["train", project, *FLAGS]) == 0
    runs = tmp_path / "team repo" / "runs"
    assert (runs / ".gitignore").read_text() == GITIGNORE_TEXT
    assert GITIGNORE_TEXT.splitlines()[-1] == "*"  # the folder, this file too, is ignored whole
    assert cli.main(["train", project, *FLAGS]) == 0  # a second run leaves it as it is
    assert len([p for p in runs.iterdir() if p.is_dir()]) == 2 and (runs / ".gitignore").read_text() == GITIGNORE_TEXT
    capsys.readouterr()
    assert cli.main(["runs", str(runs), "--json"]) == 0  # the file is no run
    assert len(json.loads(capsys.readouterr().out)["runs"]) == 2


def test_git_status_lists_the_project_and_not_its_runs(tmp_path, capsys, git) -> None:
    repo = tmp_path / "repo"
    project = _project(repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert cli.main(["train", project, *FLAGS]) == 0
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout
    assert status.splitlines() == ["?? clf.revs"]


def test_a_runs_folder_that_already_exists_is_left_alone(tmp_path, capsys) -> None:
    """A team that deleted the file to commit its runs does not get it back with the next run."""
    project = _project(tmp_path)
    (tmp_path / "runs").mkdir()
    assert cli.main(["train", project, *FLAGS]) == 0
    assert not (tmp_path / "runs" / ".gitignore").exists()


def test_a_refused_first_run_leaves_no_runs_folder(tmp_path, capsys) -> None:
    project = _project(tmp_path)
    assert cli.main(["train", project, "--data", "nosuch.npz", *FLAGS]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clf.revs"]
