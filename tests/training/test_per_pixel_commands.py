"""Per-pixel labels everywhere a task runs: ``revstudio check`` says a C x H x W Output takes a class per
pixel (it said nothing of it, or called it per step), ``gradcheck --data`` checks a segmentation set's
first batch with train's note on the scored pixels (it was refused), and ``revstudio runs`` lists the
run's ``pixels_scored``."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from revstudio import cli
from revstudio.core.generate import segmenter
from revstudio.core.project_write import save

H, W = 6, 5


def _project(folder: Path, task: str = "auto") -> str:
    g = segmenter(1, H, W, classes=3, hidden=4)
    g.set_training({"version": 1, "data": "seg.npz", "batch_size": 4, "seed": 1, "task": task})
    path = folder / f"seg_{task}.revs"
    save(g, path)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((24, 1, H, W)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    y[:, 0, :] = -100  # the top row unlabelled
    np.savez(folder / "seg.npz", x=x, y=y)
    return str(path)


@pytest.mark.parametrize("task", ["auto", "classification"])
def test_check_says_a_c_x_h_x_w_output_takes_a_class_per_pixel(tmp_path, capsys, task) -> None:
    assert cli.main(["check", _project(tmp_path, task), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["task"]
    why = got["why"]
    assert got["kind"] == "classification", got  # (auto: the data's labels decide it, read from the header)
    if task == "auto":
        assert why.startswith("the data's 'y' (seg.npz) holds 24x6x5 int64: whole numbers for each of the 6x5 "
                              "positions of 'seg', a class per pixel"), why
    else:
        assert "'seg' reads 3x6x5: 3 class scores for each of 6x5 pixels (channels first), for N x 6x5 labels" in why


def test_gradcheck_data_checks_a_segmentation_sets_first_batch(tmp_path, capsys) -> None:
    path = _project(tmp_path)
    assert cli.main(["gradcheck", path, "--data", str(tmp_path / "seg.npz"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["input_batch"]
    assert got["summary"].endswith("3 classes per pixel")
    assert "a class per pixel; loss and accuracy count the 600 scored pixels of 720 (labels of -100 mark the " \
           "rest)" in got["inputs_note"]


def test_runs_lists_the_pixels_a_run_scored(tmp_path, capsys) -> None:
    path = _project(tmp_path)
    out = str(tmp_path / "run")
    assert cli.main(["train", path, "--steps", "6", "--log-every", "3", "--val-every", "6", "--device", "cpu",
                     "--gradcheck-every", "0", "--memory-every", "0", "--out", out]) == 0
    capsys.readouterr()
    assert cli.main(["runs", out]) == 0
    listed = capsys.readouterr().out
    assert "pixels_scored" in listed and "val_pixels_scored" in listed and "steps_scored" not in listed
