"""Resuming a run whose data file was rewritten (or other data named) says so.

A resumed run read whatever the data path held now: a file cut from 1,797 to 500 samples
changed the epochs and the validation set, and the run went on without a word.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from training_kit import linear_classifier

from revstudio import cli
from revstudio.core.project import save

FLAGS = ["--batch-size", "8", "--device", "cpu", "--gradcheck-every", "0", "--memory-every", "0",
         "--val-every", "0", "--checkpoint-every", "1"]


def _project(tmp_path: Path) -> str:
    g = linear_classifier()
    path = tmp_path / "clf.revs"
    save(g, path)
    return str(path)


def _data(path: Path, n: int, scale: float = 1.0) -> None:
    rng = np.random.default_rng(0)
    np.savez(path, x=(rng.normal(size=(n, 4)) * scale).astype("float32"), y=rng.integers(0, 3, n))


def _started(out: str) -> dict:
    return next(r for r in map(json.loads, out.splitlines()) if r.get("event") == "started")


def test_a_resume_on_the_same_data_says_nothing_and_on_rewritten_data_says_what_changed(tmp_path, capsys) -> None:
    project, data, run = _project(tmp_path), tmp_path / "d.npz", str(tmp_path / "run")
    _data(data, 40)
    assert cli.main(["train", project, "--data", str(data), "--steps", "1", *FLAGS, "--out", run, "--json"]) == 0
    capsys.readouterr()
    assert cli.main(["train", "--resume", run, "--steps", "2", "--json"]) == 0
    assert _started(capsys.readouterr().out)["data_changed"] is None
    _data(data, 20)
    assert cli.main(["train", "--resume", run, "--steps", "3", "--json"]) == 0
    assert _started(capsys.readouterr().out)["data_changed"] == [
        "d.npz: 36 train / 4 val, x 4, 3 classes", "d.npz: 18 train / 2 val, x 4, 3 classes"]
    _data(data, 20, scale=2.0)  # the same sizes, other values: told in the terminal too
    assert cli.main(["train", "--resume", run, "--steps", "4"]) == 0
    out = capsys.readouterr().out
    assert ("note: the data are not those the run trained on before (then: d.npz: 18 train / 2 val, x 4, 3 "
            "classes; now: d.npz: 18 train / 2 val, x 4, 3 classes (the same sizes, other values))") in out


def test_the_started_row_of_a_resume_names_the_step_it_continues_from(tmp_path, capsys) -> None:
    """A run killed after its last checkpoint has rows beyond it in metrics.jsonl, which the resume
    writes again: its ``started`` row says from which step, so a script can keep the later rows."""
    project, data, run = _project(tmp_path), tmp_path / "d.npz", str(tmp_path / "run")
    _data(data, 40)
    flags = [*FLAGS[:-2], "--checkpoint-every", "2", "--log-every", "1"]
    assert cli.main(["train", project, "--data", str(data), "--steps", "3", *flags, "--out", run, "--json"]) == 0
    assert _started(capsys.readouterr().out)["resumed_at"] is None
    assert cli.main(["train", "--resume", run, "--steps", "5", "--json"]) == 0
    assert _started(capsys.readouterr().out)["resumed_at"] == 3
