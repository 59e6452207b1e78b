"""``--nproc 2 --accumulate 3``: a step's micro-batches before its last run under DDP's ``no_sync``, so each
optimizer step all-reduces the gradients once, not once per micro-batch (the results are the same either
way; the traffic is what differs), counted by a communication hook in each worker (tests/ddp_count.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
from ddp_count import counting_env, gradient_allreduces
from training_kit import ROOT, linear_regression

from revstudio.core.project import save


def test_each_optimizer_step_all_reduces_its_gradients_once(tmp_path) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 4)).astype(np.float32)
    np.savez(tmp_path / "reg.npz", x=x, y=(x[:, :3] * 2 + 0.5).astype(np.float32))
    save(linear_regression({"task": "regression", "data": "reg.npz"}), tmp_path / "reg.revs")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    counts = counting_env(tmp_path, env)
    proc = subprocess.run([sys.executable, "-P", "-m", "revstudio", "train", str(tmp_path / "reg.revs"), "--device",
                           "cpu", "--gradcheck-every", "0", "--memory-every", "0", "--val-every", "0", "--batch-size",
                           "16", "--accumulate", "3", "--steps", "4", "--json", "--nproc", "2", "--out",
                           str(tmp_path / "run")], capture_output=True, text=True, env=env, cwd=str(tmp_path),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    end = json.loads(proc.stdout.splitlines()[-1])
    assert end["event"] == "finished" and end["step"] == 4 and end["ranks_in_sync"] is True
    assert gradient_allreduces(counts) == {"rank0": 4, "rank1": 4}  # 4 steps of 3 micro-batches: 4, not 12
