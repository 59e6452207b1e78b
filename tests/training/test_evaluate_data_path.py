"""A relative ``evaluate --data`` is read from the current folder, as the shell reads it; one that names
nothing there but names data in the run's project folder (where ``train`` reads a relative --data) is
refused saying the path to give."""
from __future__ import annotations

import json

import numpy as np
import torch
from training_kit import linear_regression

from revstudio import cli
from revstudio.core.project import save


def test_a_relative_data_path_is_the_current_folders_and_a_project_folder_one_is_named(
        tmp_path, monkeypatch, capsys) -> None:
    torch.set_num_threads(1)
    proj = tmp_path / "proj"
    proj.mkdir()
    rng = np.random.default_rng(1)
    for name, n in (("train.npz", 48), ("test.npz", 20)):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        np.savez(proj / name, x=x, y=(x[:, :3] * 2).astype(np.float32))
    g = linear_regression({"task": "regression", "batch_size": 8})
    save(g, proj / "reg.revs")
    monkeypatch.chdir(proj)  # train from the project's folder: both read a relative --data from it
    assert cli.main(["train", "reg.revs", "--data", "train.npz", "--out", "runs/reg", "--steps", "3",
                     "--device", "cpu", "--gradcheck-every", "0", "--memory-every", "0", "--json"]) == 0
    assert cli.main(["evaluate", "runs/reg", "--data", "test.npz", "--json", "--no-save"]) == 0
    here = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert here["samples"] == 20 and here["split"] == "all"

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert cli.main(["evaluate", "../proj/runs/reg", "--data", "../proj/test.npz", "--json", "--no-save"]) == 0
    assert json.loads(capsys.readouterr().out)["mse"] == here["mse"]  # the shell's path: the same file
    assert cli.main(["evaluate", "../proj/runs/reg", "--data", "test.npz"]) == 2
    err = capsys.readouterr().err
    assert f"reads a relative path from the current folder ({elsewhere})" in err, err
    assert f"give --data {proj / 'test.npz'}" in err and "Traceback" not in err
    assert cli.main(["evaluate", "../proj/runs/reg", "--data", "nowhere.npz"]) == 2  # named nowhere: no hint
    assert "project folder has" not in capsys.readouterr().err
