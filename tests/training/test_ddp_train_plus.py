"""Early stopping and gradient accumulation under ``--nproc 2`` (gloo on the CPU): every rank stops at the
same step, and an accumulated run over 2 processes optimises what one process does."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from training_kit import ROOT, linear_regression

from revstudio.core.project import save
from revstudio.training import runs

ARGS = ["--device", "cpu", "--gradcheck-every", "0", "--memory-every", "0", "--batch-size", "16",
        "--val-every", "5", "--lr", "0.05", "--json", "--nproc", "2"]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    here = tmp_path_factory.mktemp("ddp_plus")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 4)).astype(np.float32)
    np.savez(here / "reg.npz", x=x, y=(x[:, :3] * 2 + 0.5).astype(np.float32))
    save(linear_regression({"task": "regression", "data": "reg.npz"}), here / "reg.revs")
    return here


def _train(project, name: str, *more: str) -> list[dict]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-P", "-m", "revstudio", "train", str(project / "reg.revs"), *ARGS,
                           "--out", str(project / name), *more], capture_output=True, text=True, env=env,
                          cwd=str(project), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert rows == runs.read_metrics(str(project / name))
    return rows


def test_every_rank_stops_early_at_the_same_step(project) -> None:
    rows = _train(project, "early", "--steps", "100", "--patience", "2", "--min-delta", "1000")
    end = rows[-1]
    assert end["event"] == "finished" and end["step"] == 15 and end["early_stopped"]["step"] == 15
    assert end["ranks_in_sync"] is True  # (both ranks reached the end together: none went on training)
    assert torch.load(project / "early" / "checkpoints" / "last.pt", weights_only=True)["step"] == 15


def test_two_processes_accumulating_train_as_one_does(project, capsys) -> None:
    """Two micro-batches of 16 a step over 2 processes (8 each), the first without an all-reduce (no_sync):
    the losses and weights of one process accumulating the same micro-batches."""
    rows = _train(project, "two", "--steps", "4", "--accumulate", "2", "--log-every", "1")
    from revstudio import cli

    assert cli.main(["train", str(project / "reg.revs"), *ARGS[:-2], "--out", str(project / "one"), "--steps", "4",
                     "--accumulate", "2", "--log-every", "1"]) == 0
    one = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    losses = lambda rs: [r["loss"] for r in rs if r["kind"] == "step"]  # noqa: E731
    assert len(losses(rows)) == 4 and losses(rows) == pytest.approx(losses(one), rel=1e-5)
    assert rows[-1]["ranks_in_sync"] is True
    a = torch.load(project / "two" / "checkpoints" / "last.pt", weights_only=True)["model"]
    b = torch.load(project / "one" / "checkpoints" / "last.pt", weights_only=True)["model"]
    for key in a:
        assert torch.allclose(a[key].double(), b[key].double(), rtol=1e-4, atol=1e-6), key
