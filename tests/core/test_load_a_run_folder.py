"""`rs.load("runs/x")`, `rs.load("runs/x/checkpoints/last.pt")` and `rs.export("runs/x")` from a
notebook: what the command line says of a run folder or a checkpoint given as the project, the
Python API said too. They said "Is a directory; check the path", "not UTF-8 text (byte 64)", and
`rs.export` advised `rs.export(rs.load('runs/x'))`, which failed the same way."""
from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

import revstudio as rs
from revstudio.core.project import ProjectError

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "examples" / "digits_revnet.revs"


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "x"
    (run / "checkpoints").mkdir(parents=True)
    (run / "project.revs").write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    with zipfile.ZipFile(run / "checkpoints" / "last.pt", "w") as archive:  # (torch.save writes a zip)
        archive.writestr("last/data.pkl", b"\x80\x02}q\x00.")
    return run


def test_loading_a_run_folder_names_the_project_it_trained(tmp_path: Path) -> None:
    run = _run(tmp_path)
    with pytest.raises(ProjectError) as err:
        rs.load(run)
    assert f"{run}: is a folder (a run directory); the project it trained is " \
           f"{run / 'project.revs'}" in str(err.value), err.value
    assert rs.load(run / "project.revs").nodes  # what it names loads


def test_a_folder_is_named_one_in_the_words_the_commands_use(tmp_path: Path, capsys) -> None:
    """The app (File > Open, `revstudio FOLDER`) said "cannot read the file (Is a directory)" where
    `revstudio check FOLDER` said "is a folder, not a project file": one slip, two wordings."""
    from revstudio import cli

    with pytest.raises(ProjectError) as err:
        rs.load(tmp_path)
    assert cli.main(["check", str(tmp_path)]) == 2
    said = capsys.readouterr().err
    assert str(err.value) == f"{tmp_path}: is a folder, not a project file; give the .revs file"
    assert said.strip() == f"revstudio: {err.value}"
    run = _run(tmp_path)
    (run / "status.json").write_text('{"status": "finished"}', encoding="utf-8")
    with pytest.raises(ProjectError) as err:
        rs.load(run)
    assert cli.main(["check", str(run)]) == 2
    assert capsys.readouterr().err.strip() == f"revstudio: {err.value}"


def test_loading_a_checkpoint_says_it_is_a_zip_of_trained_weights(tmp_path: Path) -> None:
    run = _run(tmp_path)
    with pytest.raises(ProjectError) as err:
        rs.load(run / "checkpoints" / "last.pt")
    assert "not a revstudio project; it is a zip file, such as torch.save writes (a run's " \
           "checkpoints/last.pt holds trained weights: its project is the run folder's project.revs)" \
           in str(err.value), err.value


def test_a_run_folder_handed_to_the_api_is_told_the_project_inside(tmp_path: Path) -> None:
    run = _run(tmp_path)
    with pytest.raises(TypeError) as err:
        rs.export(str(run))  # type: ignore[arg-type]
    inside = str(run / "project.revs")
    assert f"a run folder; load the project it trained first: rs.export(rs.load({inside!r}))" in str(err.value)
    with pytest.raises(TypeError, match=r"load the project first: rs.check\(rs.load\("):
        rs.check(str(tmp_path / "mine.revs"))  # type: ignore[arg-type]
