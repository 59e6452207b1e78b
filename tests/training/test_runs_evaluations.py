"""``revstudio runs`` / ``rs.runs`` say each run's saved evaluations: the latest's headline figure and how many."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from training_kit import linear_regression

import revstudio as rs
from revstudio import cli
from revstudio.core.project import save


def _reg_project(here):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 4)).astype(np.float32)
    np.savez(here / "reg.npz", x=x, y=(x[:, :3] * 2).astype(np.float32))
    g = linear_regression({"task": "regression", "data": "reg.npz", "batch_size": 8})
    save(g, here / "reg.revs")
    return here / "reg.revs"


def test_runs_lists_the_latest_evaluation_and_how_many_were_saved(tmp_path, capsys) -> None:
    torch.set_num_threads(1)
    project = _reg_project(tmp_path)
    flags = ["--device", "cpu", "--steps", "4", "--gradcheck-every", "0", "--memory-every", "0", "--json"]
    folder = tmp_path / "runs"
    for name in ("a", "b"):
        assert cli.main(["train", str(project), "--out", str(folder / name), *flags]) == 0
    assert cli.main(["runs", str(folder)]) == 0
    assert "evaluated" not in capsys.readouterr().out  # (no column while no run has one)
    capsys.readouterr()
    assert cli.main(["evaluate", str(folder / "a"), "--json"]) == 0
    assert cli.main(["evaluate", str(folder / "a"), "--json", "--checkpoint", "best"]) == 0
    latest = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert cli.main(["runs", str(folder), "--json"]) == 0
    listed = {r["name"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    said = listed["a"]["evaluations"]
    assert said["count"] == 2 and listed["b"]["evaluations"] is None
    assert said["latest"]["metric"] == "mse" and said["latest"]["value"] == latest["mse"]
    assert said["latest"]["checkpoint"].endswith("best.pt") and said["latest"]["file"].startswith("evaluations")
    assert rs.runs(folder)[0]["evaluations"] == said or rs.runs(folder)[1]["evaluations"] == said
    assert cli.main(["runs", str(folder)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert "evaluated" in table[0]
    row_a = next(line for line in table if line.startswith("a "))
    assert f"mse {latest['mse']:.4g} (2 saved)" in row_a

    newest = Path(latest["saved"])  # (two in one second: <time>.json, then <time>-2.json)
    newest.write_text("{cut sh")  # a damaged latest: the one before it is said, the count stays
    assert cli.main(["runs", str(folder), "--json"]) == 0
    said = {r["name"]: r for r in json.loads(capsys.readouterr().out)["runs"]}["a"]["evaluations"]
    assert said["count"] == 2 and said["latest"]["checkpoint"].endswith("last.pt")


def test_evaluations_saved_in_one_second_keep_the_order_they_were_written(tmp_path) -> None:
    from revstudio.training.evaluation import evaluations

    names = ["20261207-132459.json", "20261207-132500.json", "20261207-132500-2.json", "20261207-132500-10.json"]
    (tmp_path / "evaluations").mkdir()
    for name in reversed(names):
        (tmp_path / "evaluations" / name).write_text("{}")
    assert [Path(p).name for p in evaluations(str(tmp_path))] == names
