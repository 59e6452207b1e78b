"""The live-plots benchmark in quick mode, so it cannot rot (timings are not asserted here)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_bench_plots_quick_runs_and_prints_its_table() -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_plots.py"), "--quick"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "every curve at 10,000 points" in out.stdout
    assert "rows of one step vs a training step of revnet_coupling" in out.stdout
