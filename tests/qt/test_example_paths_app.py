"""The app's side of data paths that move with a project (docs/data.md) and of a shipped example's runs.

A data path saved absolute inside a home folder is said once in the status bar and Log; Train on a
shipped example opened by its path (``revstudio examples NAME`` prints it) wrote runs/ into
revstudio's own resources folder: the app offers Save As first, else trains into its data folder.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from revstudio.core.commands import SetTraining
from revstudio.qt.files import examples
from revstudio.qt.training.controller import runs_root

DIGITS = next(p for p in examples() if p.stem == "digits_revnet")


def test_a_home_folder_data_path_is_said_once_at_save(make_window, dialogs, tmp_path) -> None:
    window = make_window()
    said: list[str] = []
    window.files.message.connect(said.append)
    graph = window.document.graph
    window.document.push(SetTraining(graph, {**graph.training, "data": "/home/ada/thesis/x.npz"}))
    dialogs.save_paths.append(str(tmp_path / "mine.revs"))
    assert window.files.save_as()
    assert "training.data is written as /home/ada/thesis/x.npz, a path in a home folder" in said[-1]
    assert "a teammate's checkout (or another machine) will not find it" in said[-1]
    assert window.files.save()
    assert said[-1] == f"Saved {tmp_path / 'mine.revs'}"


def _train_recorded(window: Any, monkeypatch: Any) -> list[Path]:
    roots: list[Path] = []
    monkeypatch.setattr(window.training.controller, "start",
                        lambda init=None: roots.append(runs_root(window.document.path)))
    return roots


def test_train_on_a_shipped_example_offers_save_as_first(make_window, dialogs, tmp_path, monkeypatch) -> None:
    window = make_window()
    assert window.files.load_path(str(DIGITS))
    roots = _train_recorded(window, monkeypatch)
    dialogs.confirms.append(True)
    dialogs.save_paths.append(str(tmp_path / "mine.revs"))
    assert window.training.train() is None
    assert "confirm:Train a shipped example" in dialogs.asked
    assert window.document.path == str(tmp_path / "mine.revs") and roots == [tmp_path / "runs"]


def test_declined_the_runs_go_to_the_apps_folder_not_revstudios(make_window, dialogs, monkeypatch) -> None:
    window = make_window()
    assert window.files.load_path(str(DIGITS))
    roots = _train_recorded(window, monkeypatch)
    dialogs.confirms.append(False)
    assert window.training.train() is None
    assert roots == [runs_root(None)] and DIGITS.parent not in roots[0].parents
    assert window.document.path == str(DIGITS)


def test_a_cancelled_save_as_does_not_train(make_window, dialogs, monkeypatch) -> None:
    window = make_window()
    assert window.files.load_path(str(DIGITS))
    roots = _train_recorded(window, monkeypatch)
    dialogs.confirms.append(True)
    assert window.training.train() == "Not started: Save As was cancelled"
    assert roots == []


def test_save_in_the_same_folder_writes_a_near_home_path_relative(make_window, dialogs, tmp_path,
                                                                  monkeypatch) -> None:
    # Save As wrote it relative but a Save in the file's own folder kept it absolute and warned, as rs.save did
    home = tmp_path / "ada"
    (home / "proj").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    window = make_window()
    said: list[str] = []
    window.files.message.connect(said.append)
    dialogs.save_paths.append(str(home / "proj" / "mine.revs"))
    assert window.files.save_as()
    graph = window.document.graph
    window.document.push(SetTraining(graph, {**graph.training, "data": str(home / "data" / "x.npz")}))
    assert window.files.save()
    assert said[-1] == f"Saved {home / 'proj' / 'mine.revs'}"
    assert json.loads((home / "proj" / "mine.revs").read_text())["training"]["data"] == "../data/x.npz"
    assert window.document.graph.training["data"] == "../data/x.npz"

