"""The prepared GPU check runs its steps end to end on the CPU in --quick mode, so the
one short run a GPU session gets is not spent on a script that rotted."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_device_check_quick_on_the_cpu(tmp_path: Path) -> None:
    proc = subprocess.run(
        # every sweep cell, however loaded the machine: a time-boxed sweep measured 3 of 4 cells
        # in a CI run sharing its cores (how many cells fit is the benchmark's call, not this test's)
        [sys.executable, str(ROOT / "benchmarks" / "device_check.py"), "--device", "cpu", "--quick",
         "--sweep-seconds", "3600", "--out", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads((tmp_path / "device_check.json").read_text())
    kinds = {c["check"] for c in data["checks"]}
    assert kinds == {"gradcheck", "memory", "export", "fused", "train", "memory-cli", "autocast-flat",
                     "memory-cli-precision"} and all(c["ok"] for c in data["checks"])
    flat = next(c for c in data["checks"] if c["check"] == "autocast-flat")
    assert flat["precision"] == "bf16" and 0 < flat["growth"]["bf16"] <= flat["growth"]["fp32"]
    runs = [c for c in data["checks"] if c["check"] == "train"]
    assert [r["run"] for r in runs] == ["reversible", "reversible, budget 700KiB", "standard"]
    assert all(r["peak_bytes"] > 0 and 0.8 < r["estimate_over_peak"] < 1.2 for r in runs)
    # the benchmarks that run in their own process came back, each with its cells
    assert [c["cell"] for c in data["overlap"]["cells"]] == [[2, 2, 8, 4], [3, 4, 8, 8]]
    assert all(c["overlapped_vs_serial"] == 0 for c in data["overlap"]["cells"])  # one stream: the same sums
    assert len(data["sweep"]["cells"]) == 4 and "revstudio-f32streams" in data["sweep"]["columns"]
    projects = {c["project"] for c in data["checks"] if c["check"] == "gradcheck"}
    assert len(projects) == len(list((ROOT / "resources" / "examples").glob("*.revs")))
    assert [row["blocks"] for row in data["bench"]["rows"]] == [2, 4]
    assert "checks passed" in proc.stdout and "recompute floor" in proc.stdout
    assert "overlap gain" in proc.stdout and "summary: default / recompute floor" in proc.stdout


def test_device_check_says_when_there_is_no_gpu() -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no GPU visible, on any machine
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "device_check.py")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    assert proc.returncode == 2 and "CUDA is not available" in proc.stderr
