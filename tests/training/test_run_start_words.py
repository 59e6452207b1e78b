"""What a run says as it starts: the settings a resume changed (config.json then holds only the
new ones), and a batch the training data is too small to fill."""
from __future__ import annotations

import json

import numpy as np
from training_kit import EXAMPLES

from revstudio import cli
from revstudio.training import runs

TWO_BRANCH = str(next(p for p in EXAMPLES if p.stem == "two_branch"))


def _data(tmp_path, samples: int) -> str:
    rng = np.random.default_rng(0)
    path = tmp_path / f"d{samples}.npz"
    np.savez(path, x=rng.normal(size=(samples, 3, 8, 8)).astype("float32"), y=rng.integers(0, 4, samples))
    return str(path)


def test_a_resume_says_which_settings_it_changed_and_the_rows_keep_the_old(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    base = ["--data", _data(tmp_path, 64), "--batch-size", "8", "--device", "cpu"]
    assert cli.main(["train", TWO_BRANCH, "--steps", "4", *base, "--out", str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["train", "--resume", str(out), "--steps", "6", "--lr", "0.5"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith(f"resumed from {out} with lr 0.001 -> 0.5, steps 4 -> 6"), first
    started = [r for r in runs.read_metrics(str(out)) if r.get("event") == "started"]
    assert [r["config"]["lr"] for r in started] == [0.001, 0.5]
    assert started[0]["changed"] == {} and started[1]["changed"] == {"lr": [0.001, 0.5], "steps": [4, 6]}
    assert json.loads((out / "config.json").read_text())["lr"] == 0.5


def test_a_batch_larger_than_the_training_data_is_said(tmp_path, capsys) -> None:
    data = _data(tmp_path, 5)  # 4 train, 1 validation
    assert cli.main(["train", TWO_BRANCH, "--steps", "2", "--data", data, "--device", "cpu",
                     "--out", str(tmp_path / "run")]) == 0
    text = capsys.readouterr().out
    assert "note: the training data has only 4 samples, fewer than the batch size 32: each step trains on all 4" \
        in text
    assert cli.main(["train", TWO_BRANCH, "--steps", "1", "--data", _data(tmp_path, 64), "--device", "cpu",
                     "--out", str(tmp_path / "run2")]) == 0
    assert "note: the training data" not in capsys.readouterr().out
