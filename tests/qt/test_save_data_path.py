"""Save As writes data paths the new file can carry: relative to it where the data lies in its
folder tree or just above, absolute further off. An opened example's data path is absolute (so
the untitled copy trains from anywhere); saved as is, it tied the user's file to this install."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from revstudio import resources
from revstudio.core.commands import SetTraining
from revstudio.qt.files import examples


def _saved_data(path: Path) -> str:
    return json.loads(path.read_text())["training"]["data"]


def _example(name: str) -> Path:
    return next(p for p in examples() if p.stem == name)


def test_save_as_round_trip_trains_from_another_working_folder(make_window, dialogs, tmp_path, monkeypatch,
                                                             settle):
    project = tmp_path / "proj"
    (project / "data").mkdir(parents=True)
    shutil.copy(resources.path("data") / "digits.npz", project / "data" / "digits.npz")
    window = make_window()
    window.files.open_example(_example("digits_revnet"))
    settle()
    graph = window.document.graph
    assert os.path.isabs(graph.training["data"])  # the untitled copy reads the example's data from anywhere
    # the user points it at their own copy (Browse gives an absolute path) and saves
    window.document.push(SetTraining(graph, {**graph.training, "data": str(project / "data" / "digits.npz"),
                                             "steps": 2, "val_every": 0}))
    dialogs.save_paths.append(str(project / "model.revs"))
    assert window.files.save_as()
    assert _saved_data(project / "model.revs") == "data/digits.npz"
    assert graph.training["data"] == "data/digits.npz"  # the settings show what the file holds

    # Save As one folder down: the relative path is rewritten to name the same file
    (project / "variants").mkdir()
    dialogs.save_paths.append(str(project / "variants" / "wide.revs"))
    assert window.files.save_as()
    assert _saved_data(project / "variants" / "wide.revs") == "../data/digits.npz"

    # far from the data: absolute (a relative path climbing out of the tree would mean nothing)
    far = tmp_path / "a" / "b" / "c" / "d"
    far.mkdir(parents=True)
    dialogs.save_paths.append(str(far / "far.revs"))
    assert window.files.save_as()
    assert _saved_data(far / "far.revs") == str(project / "data" / "digits.npz")

    # reopen and train the first file from another working folder
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert window.files.load_path(str(project / "model.revs"))
    from revstudio.qt.training.section import data_problem

    assert data_problem(window.document.graph.training, window.document.path) is None
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "revstudio", "train", str(project / "model.revs"), "--steps", "2",
                           "--out", str(tmp_path / "run")], cwd=elsewhere, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_plain_save_in_the_same_folder_keeps_the_path_as_written(make_window, dialogs, tmp_path, settle):
    from revstudio.core.project import load, save

    (tmp_path / "data").mkdir()
    shutil.copy(resources.path("data") / "digits.npz", tmp_path / "data" / "digits.npz")
    graph = load(str(_example("digits_revnet")))
    graph.training = {**graph.training, "data": str(tmp_path / "data" / "digits.npz")}
    save(graph, tmp_path / "mine.revs")
    window = make_window(load(str(tmp_path / "mine.revs")), str(tmp_path / "mine.revs"))
    assert window.files.save()
    assert _saved_data(tmp_path / "mine.revs") == str(tmp_path / "data" / "digits.npz")


def test_undo_after_save_as_to_another_folder_brings_back_a_path_that_reaches_the_data(make_window, dialogs,
                                                                                       tmp_path, settle):
    """Save As re-expresses the data path for the new folder; the run-settings changes on the undo
    stack move with it. Before, undoing one brought back its path relative to the old folder, and
    from the new file it named nothing (the Run button refused: data not found)."""
    from revstudio.core.project import load, save
    from revstudio.qt.training.section import data_problem

    project = tmp_path / "proj"
    (project / "data").mkdir(parents=True)
    for name in ("a.npz", "b.npz"):
        shutil.copy(resources.path("data") / "digits.npz", project / "data" / name)
    graph = load(str(_example("digits_revnet")))
    graph.source = None  # (its path is written for the file it is saved as, as in a graph built in code)
    graph.training = {**graph.training, "data": "data/a.npz"}
    save(graph, project / "model.revs")
    window = make_window(load(str(project / "model.revs")), str(project / "model.revs"))
    settle()
    graph = window.document.graph
    window.document.push(SetTraining(graph, {**graph.training, "data": "data/b.npz"}))
    (project / "variants").mkdir()
    dialogs.save_paths.append(str(project / "variants" / "wide.revs"))
    assert window.files.save_as()
    assert graph.training["data"] == "../data/b.npz"

    window.document.undo_stack.undo()
    assert graph.training["data"] == "../data/a.npz"  # proj/data/a.npz, seen from proj/variants
    assert data_problem(graph.training, window.document.path) is None
    window.document.undo_stack.redo()
    assert graph.training["data"] == "../data/b.npz"
    assert data_problem(graph.training, window.document.path) is None
    # and the file saved after the undo names the data the user had
    window.document.undo_stack.undo()
    assert window.files.save()
    assert _saved_data(project / "variants" / "wide.revs") == "../data/a.npz"
