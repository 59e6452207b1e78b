"""A run's checkpoint given where a project goes (`revstudio export runs/R/checkpoints/last.pt`) is
named as what it is, with the run's project and how its weights load: it was refused as "not
UTF-8 text (byte 64); not a revstudio project"."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio import cli  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "resources" / "examples" / "digits_revnet.revs"


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    shutil.copy(EXAMPLE, run / "project.revs")
    (run / "status.json").write_text('{"status": "finished"}')
    torch.save({"model": {"w": torch.zeros(2)}}, run / "checkpoints" / "last.pt")
    return run


@pytest.mark.parametrize("command", [["export", "-o", "model.py"], ["check"]])
def test_a_runs_checkpoint_names_its_project_and_how_its_weights_load(command, tmp_path, capsys, monkeypatch) -> None:
    _run(tmp_path)
    monkeypatch.chdir(tmp_path)
    path = str(Path("run") / "checkpoints" / "last.pt")
    assert cli.main([command[0], path, *command[1:]]) == 2
    err = capsys.readouterr().err
    assert f"{path}: is a run's checkpoint (its trained weights), not a project" in err, err
    assert f"the project it trained is {Path('run') / 'project.revs'}" in err, err
    assert "load_state_dict(torch.load(" in err and "UTF-8" not in err, err
    assert not (tmp_path / "model.py").exists()


def test_any_other_torch_save_file_is_named_a_zip_not_text(tmp_path, capsys) -> None:
    weights = tmp_path / "weights.pt"
    torch.save({"w": torch.zeros(2)}, weights)
    assert cli.main(["export", str(weights), "-o", str(tmp_path / "m.py")]) == 2
    err = capsys.readouterr().err
    assert "is a zip file (a torch.save checkpoint?), not a revstudio project; give the .revs file" in err, err


@pytest.mark.parametrize("command", [["gradcheck", "P", "--checkpoint", "W"], ["export", "P", "--weights", "W", "-o", "m.py"],
                                     ["train", "P", "--init", "W", "--steps", "1", "--out", "r"],
                                     ["evaluate", "run", "--checkpoint", "W"]])
@pytest.mark.parametrize("weights", ["model.revs", "model_copy.json"])
def test_a_project_given_where_weights_go_is_named_a_project(command, weights, tmp_path, capsys, monkeypatch) -> None:
    """The reverse slip, the project where trained weights go, was torch's "not a readable checkpoint
    (UnpicklingError: Weights only load failed)": neither what the file is nor what to give."""
    _run(tmp_path)
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLE, "model.revs")
    shutil.copy(EXAMPLE, "model_copy.json")  # (a project by its content, whatever its name)
    args = [{"P": "model.revs", "W": weights}.get(a, a) for a in command]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert f"{weights}: is a project, not trained weights; give a run folder or a checkpoint file" in err, err
    assert "UnpicklingError" not in err and not (tmp_path / "m.py").exists() and not (tmp_path / "r").exists()
