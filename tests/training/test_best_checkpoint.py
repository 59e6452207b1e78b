"""``checkpoints/best.pt``: the weights of a run's lowest val_loss, kept across --resume, scored by
``evaluate --checkpoint best``."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch
from training_kit import linear_regression

import revstudio as rs
from revstudio import cli
from revstudio.core.project import save
from revstudio.training import checkpoint as ckpt
from revstudio.training.runs import read_metrics


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """A regression run validated every 5 steps to step 20, resumed to 30 at a learning rate that makes
    its validation worse than step 20's: its best stays step 20's."""
    torch.set_num_threads(1)
    here = tmp_path_factory.mktemp("best")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((80, 4)).astype(np.float32)
    np.savez(here / "reg.npz", x=x, y=(x[:, :3] * 2 + 0.5).astype(np.float32))
    g = linear_regression({"task": "regression"})
    save(g, here / "reg.revs")
    run = here / "run"
    assert cli.main(["train", str(here / "reg.revs"), "--out", str(run), "--device", "cpu", "--json",
                     "--gradcheck-every", "0", "--memory-every", "0", "--batch-size", "16", "--data",
                     str(here / "reg.npz"), "--steps", "20", "--val-every", "5", "--lr", "0.05"]) == 0
    assert cli.main(["train", "--resume", str(run), "--json", "--steps", "30", "--lr", "2.0"]) == 0
    return run


def test_best_pt_holds_the_lowest_val_loss_so_far_across_a_resume(resumed, capsys) -> None:
    rows = read_metrics(str(resumed))
    vals = {r["step"]: r["val_loss"] for r in rows if r.get("kind") == "val"}
    assert sorted(vals) == [5, 10, 15, 20, 25, 30]
    low = min(vals, key=vals.__getitem__)
    assert low == 20 and vals[25] > vals[20] and vals[30] > vals[20]  # (the resume made it worse)
    told = [r for r in rows if r.get("event") == "checkpoint" and r.get("best")]
    assert [r["step"] for r in told] == [5, 10, 15, 20]  # a resumed run compares with the best before it
    assert all(r["path"] == os.path.join("checkpoints", "best.pt") and r["val_loss"] == vals[r["step"]]
               for r in told)
    last_rows = [r for r in rows if r.get("event") == "checkpoint" and not r.get("best")]
    assert [r["best"] for r in last_rows] == [False, False] and last_rows[-1]["path"].endswith("last.pt")
    assert sorted(os.listdir(resumed / "checkpoints")) == ["best.pt", "last.pt"]  # one best, replaced
    best = ckpt.load(str(resumed / "checkpoints" / "best.pt"))
    ckpt.require_resumable(best, "best.pt")  # the same format as last.pt, which the same loader reads
    assert best["step"] == 20 and best["best"] == {"val_loss": pytest.approx(vals[20]), "step": 20}
    last = ckpt.load(str(resumed / "checkpoints" / "last.pt"))
    assert last["step"] == 30 and last["best"]["step"] == 20

    assert cli.main(["evaluate", str(resumed), "--checkpoint", "best", "--json", "--no-save"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["step"] == 20 and scored["checkpoint"].endswith(os.path.join("checkpoints", "best.pt"))
    assert scored["loss"] == pytest.approx(vals[20], rel=1e-5)
    assert rs.evaluate(resumed, checkpoint="best", save=False)["step"] == 20
    assert cli.main(["evaluate", str(resumed), "--json", "--no-save"]) == 0
    assert json.loads(capsys.readouterr().out)["step"] == 30  # the default stays the last


def test_init_from_a_run_folder_takes_its_last_weights_not_its_best(resumed) -> None:
    assert ckpt.weights_file(str(resumed)) == str(resumed / "checkpoints" / "last.pt")


def test_a_run_without_best_pt_is_refused_naming_the_file_and_what_to_give(resumed, capsys, tmp_path) -> None:
    import shutil

    old = tmp_path / "old"  # a run of a revstudio that kept last.pt alone
    shutil.copytree(resumed, old)
    (old / "checkpoints" / "best.pt").unlink()
    assert cli.main(["evaluate", str(old), "--checkpoint", "best"]) == 2
    err = capsys.readouterr().err
    assert "no checkpoints/best.pt" in err and "--checkpoint last" in err and "Traceback" not in err


def test_a_nan_validation_never_replaces_the_best() -> None:
    best = ckpt.Best({"best": {"val_loss": 1.5, "step": 10}})
    assert not best.record(float("nan"), 20) and not best.record(2.0, 20)
    assert best.record(1.0, 30) and best.state() == {"val_loss": 1.0, "step": 30}
    fresh = ckpt.Best(None)
    assert fresh.state() is None and fresh.record(9.0, 1)
