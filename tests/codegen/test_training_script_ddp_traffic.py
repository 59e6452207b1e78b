"""The exported training script under ``torchrun --nproc_per_node 2`` with ``--accumulate 3``: as ``revstudio
train``, a step's micro-batches before its last run under ``no_sync``, so each optimizer step all-reduces the
gradients once (counted by a communication hook in each worker: tests/ddp_count.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codegen_harness import with_section  # noqa: E402
from ddp_count import counting_env, gradient_allreduces  # noqa: E402

from revstudio.core import generate  # noqa: E402


def test_the_script_all_reduces_once_per_accumulated_step(tmp_path: Path) -> None:
    from revstudio.codegen import export

    graph = with_section(generate.revnet_chain(1, channels=4, size=4, wired=True), data="synthetic")
    script = tmp_path / "traffic.py"
    script.write_text(export(graph, with_training=True), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}  # (revstudio not importable)
    env["OMP_NUM_THREADS"] = "1"
    counts = counting_env(tmp_path, env)
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script),
            "--steps", "3", "--batch-size", "4", "--accumulate", "3", "--device", "cpu", "--val-fraction", "0",
            "--out", "ck.pt"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert torch.load(tmp_path / "ck.pt", weights_only=True)["step"] == 3
    assert gradient_allreduces(counts) == {"rank0": 3, "rank1": 3}  # 3 steps of 3 micro-batches: 3, not 9
