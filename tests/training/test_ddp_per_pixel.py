"""``--nproc 2`` on class labels per pixel with a random ``mask``: the ranks score different numbers of
pixels, and the run optimises the mean over every scored pixel of the global batch, as one process does
(the weighing per-step runs use, reached through ``pixels_scored``)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from training_kit import ROOT

from revstudio import cli
from revstudio.core.generate import segmenter
from revstudio.core.project_write import save

ARGS = ["--steps", "3", "--batch-size", "8", "--lr", "0.05", "--optimizer", "sgd", "--log-every", "1",
        "--val-every", "0", "--gradcheck-every", "0", "--memory-every", "0", "--device", "cpu", "--json"]


def test_two_processes_match_one_on_per_pixel_labels(tmp_path, capsys) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 1, 6, 5)).astype(np.float32)
    mask = rng.random((32, 6, 5)) > rng.random((32, 1, 1))  # (each sample its own share scored)
    mask[:, 0, 0] = True
    np.savez(tmp_path / "seg.npz", x=x, y=(x[:, 0] > 0).astype(np.int64), mask=mask)
    project = str(tmp_path / "seg.revs")
    save(segmenter(1, 6, 5, classes=2, hidden=4), project)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    two = subprocess.run([sys.executable, "-P", "-m", "revstudio", "train", project, "--data", "seg.npz", *ARGS,
                          "--nproc", "2", "--out", str(tmp_path / "two")], capture_output=True, text=True, env=env,
                         cwd=str(tmp_path), timeout=600)
    assert two.returncode == 0, two.stderr[-3000:]
    rows = [json.loads(line) for line in two.stdout.splitlines()]
    assert cli.main(["train", project, "--data", "seg.npz", *ARGS, "--out", str(tmp_path / "one")]) == 0
    one = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    steps = lambda rs: [(r["loss"], r["pixels_scored"]) for r in rs if r["kind"] == "step"]  # noqa: E731
    assert [s for _, s in steps(rows)] == [s for _, s in steps(one)] and len(steps(one)) == 3
    assert [loss for loss, _ in steps(rows)] == pytest.approx([loss for loss, _ in steps(one)], rel=1e-6)
    a = torch.load(tmp_path / "two" / "checkpoints" / "last.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "one" / "checkpoints" / "last.pt", weights_only=True)["model"]
    for key in a:
        assert torch.allclose(a[key].double(), b[key].double(), rtol=1e-5, atol=1e-7), key
