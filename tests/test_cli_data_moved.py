"""A project moved or saved elsewhere still trains on its data, and a shipped example's runs land
where the user can write (docs/data.md "Paths that move with the project", docs/cli.md "train").

Two probes: a student's ``rs.save(rs.load(example), elsewhere)`` kept ``../data/digits.npz`` as
written, and ``revstudio train`` refused it there; ``revstudio train "$(revstudio examples NAME)"``
wrote runs/ into revstudio's own resources folder.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import revstudio as rs
from revstudio.cli import main
from revstudio.core.project import dumps

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "resources" / "examples"
DIGITS = EXAMPLES / "digits_revnet.revs"


def test_an_example_saved_elsewhere_trains_on_its_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "course" / "week1" / "mine.revs"
    mine.parent.mkdir(parents=True)
    rs.save(rs.load(DIGITS), mine)
    assert main(["train", str(mine), "--steps", "1", "--out", str(tmp_path / "run")]) == 0, capsys.readouterr().err
    assert (tmp_path / "run" / "checkpoints" / "last.pt").is_file()


def test_check_warns_of_a_data_path_in_a_home_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = rs.Graph("g")
    graph.set_training({"data": "/home/ada/thesis/x.npz"})
    with pytest.warns(UserWarning):
        rs.save(graph, tmp_path / "p.revs")
    main(["check", str(tmp_path / "p.revs")])
    out = capsys.readouterr().out
    assert ("warning: training.data is written as /home/ada/thesis/x.npz, a path in a home folder: a teammate's "
            "checkout (or another machine) will not find it") in out
    main(["check", str(tmp_path / "p.revs"), "--json"])
    notes = json.loads(capsys.readouterr().out)["data_path_warnings"]
    assert len(notes) == 1 and "put the data inside the project's folder" in notes[0]


def _trained_leaving_runs_in(folder: Path, project: str) -> bool:
    """Train ``project`` one step; whether that made ``folder/runs`` (removed again, so a failing
    run leaves revstudio's own files as they were)."""
    runs = folder / "runs"
    existed = runs.exists()
    try:
        assert main(["train", project, "--steps", "1"]) == 0
        return runs.exists() and not existed
    finally:
        if runs.exists() and not existed:
            shutil.rmtree(runs)


def test_a_shipped_example_trains_into_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert not _trained_leaving_runs_in(EXAMPLES, str(DIGITS))
    out, err = capsys.readouterr()
    runs = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    assert len(runs) == 1 and runs[0].name.startswith("digits_revnet-")
    assert f"its runs go to {tmp_path / 'runs'} (the current folder)" in err
    assert f"run directory: {runs[0]}" in out + err


def test_a_project_of_ones_own_still_trains_beside_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    mine = tmp_path / "proj" / "mine.revs"
    mine.parent.mkdir()
    rs.save(rs.load(DIGITS), mine)
    assert main(["train", str(mine), "--steps", "1"]) == 0
    assert len([p for p in (mine.parent / "runs").iterdir() if p.is_dir()]) == 1 and not (tmp_path / "work" / "runs").exists()
    assert "shipped with revstudio" not in capsys.readouterr().err


def test_rs_train_of_a_loaded_example_finds_its_data_from_any_folder(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # rs.train of a Graph treats it as a file in the current folder: the example's '../data/digits.npz'
    # was looked for from there and the run was refused
    monkeypatch.chdir(tmp_path)
    run = rs.train(rs.load(DIGITS), steps=1, out=str(tmp_path / "run"), progress=False)
    assert run.status == "finished"


def test_check_says_saving_again_writes_a_near_home_path_relative(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "ada"
    (home / "proj").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    graph = rs.Graph("g")
    graph.set_training({"data": str(home / "data" / "x.npz")})
    project = home / "proj" / "p.revs"
    project.write_text(dumps(graph))  # (a file written absolute: by hand, or by an older revstudio)
    main(["check", str(project), "--json"])
    notes = json.loads(capsys.readouterr().out)["data_path_warnings"]
    assert len(notes) == 1 and notes[0].endswith(
        "save the project again (the app's Save, or rs.save) and it is written relative, as ../data/x.npz, "
        "which names the same data"), notes
    rs.save(rs.load(project), project)
    main(["check", str(project)])
    assert "warning:" not in capsys.readouterr().out


# `revstudio train digits_revnet.revs` typed in the shipped examples folder wrote ./runs there, into
# revstudio's own files: its runs go to the app's data folder, and the note says so.
@pytest.mark.parametrize("cwd", [EXAMPLES, EXAMPLES.parent])
def test_a_shipped_example_trained_from_revstudios_own_folder_runs_in_the_apps(
        cwd: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from revstudio.training.runs_folder import app_runs_folder

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    monkeypatch.setenv("APPDATA", str(tmp_path / "share"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(cwd)
    assert not _trained_leaving_runs_in(cwd, os.path.relpath(DIGITS, cwd))
    out, err = capsys.readouterr()
    folder = Path(app_runs_folder())
    assert tmp_path in folder.parents
    runs = [p for p in folder.iterdir() if p.is_dir()]
    assert len(runs) == 1 and runs[0].name.startswith("digits_revnet-")
    assert (f"its runs go to {folder} (the app's data folder: the current folder is revstudio's own too), "
            "not into revstudio's own files") in err
    assert f"run directory: {runs[0]}" in out + err
