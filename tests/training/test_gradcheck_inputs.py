"""``revstudio gradcheck`` checks the batch the run's first step trains on (the project's data,
dequantised as train does it) unless asked for a standard-normal one, and says which it used."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from pixel_kit import actnorm_flow, mnist_folder
from training_kit import checked_inputs, train_start

from revstudio import cli
from revstudio.core.project_write import save


def _mnist(root: Path) -> Path:
    """8-bit pixels of every value: a flow dequantises them to (k + u) / 256, in [0, 1)."""
    rng = np.random.default_rng(0)
    return mnist_folder(root, rng.integers(0, 256, (16, 4, 4)), rng.integers(0, 256, (8, 4, 4)))


def _project(tmp_path: Path, data: str) -> str:
    graph = actnorm_flow()
    graph.set_training({"version": 1, "data": data, "batch_size": 8, "seed": 3})
    path = tmp_path / "flow.revs"
    save(graph, path)
    return str(path)


def test_gradcheck_checks_the_first_training_batch_as_train_preprocesses_it(tmp_path, monkeypatch, capsys) -> None:
    path = _project(tmp_path, f"mnist:{_mnist(tmp_path / 'm')}")
    seen = checked_inputs(monkeypatch)
    assert cli.main(["gradcheck", path, "--batch", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["inputs"]) == {"x"}  # (the input gradients' errors keep their key)
    assert out["input_batch"]["source"] == "data" and "dequantised to 256 levels" in out["input_batch"]["describe"]
    [checked] = seen[0]
    assert checked.shape == (3, 1, 4, 4) and 0 <= float(checked.min()) and float(checked.max()) < 1
    trained, _ = train_start(path, [], monkeypatch, capsys)
    assert torch.equal(checked, trained[:3])  # the same samples, the same dequantisation noise
    assert cli.main(["gradcheck", path]) == 0
    assert f"inputs: the first training batch of mnist:{tmp_path / 'm'} (2 samples; dequantised" in \
        capsys.readouterr().out


def test_random_inputs_on_request_and_where_the_data_cannot_be_read(tmp_path, monkeypatch, capsys) -> None:
    path = _project(tmp_path, f"mnist:{_mnist(tmp_path / 'm')}")
    seen = checked_inputs(monkeypatch)
    assert cli.main(["gradcheck", path, "--inputs", "random", "--json"]) == 0
    assert seen == [None] and json.loads(capsys.readouterr().out)["input_batch"]["source"] == "random"
    missing = _project(tmp_path, "gone.npz")
    assert cli.main(["gradcheck", missing]) == 0
    text = capsys.readouterr().out
    assert "inputs: a standard-normal batch of 2 (seed 0), since the project's training data cannot be read" in text
    assert "gone.npz" in text and seen[-1] is None
    assert cli.main(["gradcheck", missing, "--inputs", "data"]) == 2
    err = capsys.readouterr().err
    assert "--inputs data: the project's training data cannot be read" in err and "gone.npz" in err


def test_a_batch_beyond_the_runs_or_the_datas_is_said(tmp_path, monkeypatch, capsys) -> None:
    path = _project(tmp_path, f"mnist:{_mnist(tmp_path / 'm')}")  # batch size 8, 16 training images
    seen = checked_inputs(monkeypatch)
    assert cli.main(["gradcheck", path, "--batch", "12"]) == 0
    assert "inputs: the first 12 training samples of mnist:" in capsys.readouterr().out
    assert cli.main(["gradcheck", path, "--batch", "40"]) == 0
    assert "16 of the 40 asked for: the training data holds 16" in capsys.readouterr().out
    assert [len(s[0]) for s in seen] == [12, 16]
