"""``--nproc 2`` on class labels per step padded past ``lengths``: the ranks score different numbers of
steps, and the run still optimises the mean over every scored step of the global batch, as one
process does (DDP's plain average of the ranks' own means weighed the steps of a rank with fewer more)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from test_per_step_runs import write_tags
from training_kit import ROOT

from revstudio import cli

ARGS = ["--steps", "4", "--batch-size", "8", "--lr", "0.05", "--optimizer", "sgd", "--log-every", "1",
        "--val-every", "0", "--gradcheck-every", "0", "--memory-every", "0", "--device", "cpu", "--json"]


def test_two_processes_match_one_on_per_step_labels(tmp_path, capsys) -> None:
    project, spec = write_tags(tmp_path)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    two = subprocess.run([sys.executable, "-P", "-m", "revstudio", "train", project, "--data", spec, *ARGS,
                          "--nproc", "2", "--out", str(tmp_path / "two")], capture_output=True, text=True, env=env,
                         cwd=str(tmp_path), timeout=600)
    assert two.returncode == 0, two.stderr[-3000:]
    rows = [json.loads(line) for line in two.stdout.splitlines()]
    assert cli.main(["train", project, "--data", spec, *ARGS, "--out", str(tmp_path / "one")]) == 0
    one = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    steps = lambda rs: [(r["loss"], r["steps_scored"]) for r in rs if r["kind"] == "step"]  # noqa: E731
    assert [s for _, s in steps(rows)] == [s for _, s in steps(one)]
    assert [loss for loss, _ in steps(rows)] == pytest.approx([loss for loss, _ in steps(one)], rel=1e-6)
    a = torch.load(tmp_path / "two" / "checkpoints" / "last.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "one" / "checkpoints" / "last.pt", weights_only=True)["model"]
    for key in a:
        assert torch.allclose(a[key].double(), b[key].double(), rtol=1e-5, atol=1e-7), key
