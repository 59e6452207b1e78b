"""The check-scaling benchmark runs end to end in --quick mode, so it cannot rot."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_check_scaling_quick() -> None:
    proc = subprocess.run([sys.executable, "-P", str(ROOT / "benchmarks" / "bench_check_scaling.py"), "--quick",
                           "--json"], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout)
    assert [r["nodes"] for r in rows] == sorted(r["nodes"] for r in rows) and all(r["total_s"] > 0 for r in rows)
