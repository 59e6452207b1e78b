"""Labels per voxel everywhere a task runs, in voxel words: ``revstudio check`` says a C x D x H x W Output
takes a class per voxel, ``gradcheck --data`` checks a volume set's first batch with train's note on the
scored voxels, and ``revstudio train`` writes ``voxels_scored`` / ``val_voxels_scored`` rows and metrics
(``revstudio runs`` lists them), where all of them said pixels."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from revstudio import cli
from revstudio.core.generate import volume_segmenter
from revstudio.core.project_write import save

D, H, W = 3, 6, 5


def _project(folder: Path, task: str = "auto") -> str:
    g = volume_segmenter(D, H, W, classes=2, hidden=4)
    g.set_training({"version": 1, "data": "vol.npz", "batch_size": 4, "seed": 1, "task": task})
    path = folder / f"vol_{task}.revs"
    save(g, path)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((24, D, H, W)).astype(np.float32)
    y = (x > 0).astype(np.int64)
    mask = np.ones((24, D, H, W), bool)
    mask[:, :, 0, :] = False  # the top row of every slice unlabelled
    np.savez(folder / "vol.npz", x=x, y=y, mask=mask)
    return str(path)


@pytest.mark.parametrize("task", ["auto", "classification"])
def test_check_says_a_c_x_d_x_h_x_w_output_takes_a_class_per_voxel(tmp_path, capsys, task) -> None:
    assert cli.main(["check", _project(tmp_path, task), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["task"]
    assert got["kind"] == "classification", got
    if task == "auto":  # (the labels' header decides it, as the run will: it said regression until a run read them)
        assert got["why"] == "the data's 'y' (vol.npz) holds 24x3x6x5 int64: whole numbers for each of the 3x6x5 " \
                             "positions of 'seg', a class per voxel (2 scores a voxel, channels first); under auto " \
                             "the labels decide (the graph alone reads as regression)", got["why"]
        assert got["labels"] == {"source": "vol.npz", "shape": [24, 3, 6, 5], "dtype": "int64"}
    else:
        assert "'seg' reads 2x3x6x5: 2 class scores for each of 3x6x5 voxels (channels first), for N x 3x6x5 " \
               "labels" in got["why"]


def test_gradcheck_data_checks_a_volume_sets_first_batch(tmp_path, capsys) -> None:
    path = _project(tmp_path)
    assert cli.main(["gradcheck", path, "--data", str(tmp_path / "vol.npz"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["input_batch"]
    assert got["summary"].endswith("2 classes per voxel")
    assert "a class per voxel; loss and accuracy count the 1800 scored voxels of 2160 ('mask' mark the rest); " \
           "the voxels not scored are still fed to the network" in got["inputs_note"]


def test_train_rows_and_runs_count_the_voxels_scored(tmp_path, capsys) -> None:
    path = _project(tmp_path)
    out = tmp_path / "run"
    assert cli.main(["train", path, "--steps", "6", "--log-every", "3", "--val-every", "6", "--device", "cpu",
                     "--gradcheck-every", "0", "--memory-every", "0", "--out", str(out), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    steps = [r for r in rows if r["kind"] == "step"]
    labelled = D * (H - 1) * W  # the voxels of a sample its mask scores
    assert [r["voxels_scored"] for r in steps] == [3 * 4 * labelled] * 2  # (3 batches of 4 since the last row)
    assert not any("pixels_scored" in r or "steps_scored" in r for r in rows)
    assert [r["val_voxels_scored"] for r in rows if r["kind"] == "val"] == [2 * labelled]  # (a tenth held out)
    finished = next(r for r in rows if r.get("event") == "finished")
    assert finished["metrics"]["voxels_scored"] > 0 and finished["metrics"]["val_voxels_scored"] > 0
    assert cli.main(["runs", str(out)]) == 0
    listed = capsys.readouterr().out
    assert "voxels_scored" in listed and "val_voxels_scored" in listed and "pixels_scored" not in listed
