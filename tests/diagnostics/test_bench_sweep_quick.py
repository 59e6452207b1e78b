"""The size sweep, the memory-budget and the update-over-F benchmarks run end to end on tiny cells, so they cannot rot."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_sweep_tiny_cells(tmp_path: Path) -> None:
    out = tmp_path / "sweep.json"
    proc = subprocess.run(
        [sys.executable, "-P", str(ROOT / "benchmarks" / "bench_sweep.py"), "--cells", "2x2x8x4", "seq:2x2x8x8",
         "--runs", "1", "--threads", "1", "--streams", "--json", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "default/floor" in proc.stdout and "summary: default / recompute floor worst" in proc.stdout
    assert "default / float32 streams (the pairs' cost) worst" in proc.stdout  # --streams
    data = json.loads(out.read_text())
    assert [c["cell"] for c in data["cells"]] == [["conv", 2, 8, 4, 2], ["seq", 2, 8, 8, 2]]
    for cell in data["cells"]:
        assert cell["floor"] > 1
        for name in ("plain", "checkpoint", "revstudio", "revstudio-f32streams"):
            col = cell["columns"][name]
            assert col["cpu_seconds"] > 0 and col["peak_bytes"] >= col["kept_bytes"] > 0
            assert col["grad_error"] < 1e-4  # the same weights as the float64 reference
            assert len(col["grad_errors"]) == 3 and max(col["grad_errors"]) < 1e-4  # three batches (--draws)
        # the float32-streams column is the default's model with other streams, not a copy of it
        assert cell["columns"]["revstudio-f32streams"]["grad_errors"] != cell["columns"]["revstudio"]["grad_errors"]


@pytest.mark.slow
def test_bench_budget_quick() -> None:
    proc = subprocess.run([sys.executable, "-P", str(ROOT / "benchmarks" / "bench_budget.py"), "--quick",
                           "--runs", "1", "--threads", "1"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| 4x8x8x8") or line.startswith("| 8x4x8x8")]
    assert len(rows) == 2 and all("(ok)" in row for row in rows)


@pytest.mark.slow
def test_bench_update_over_tiny_cells() -> None:
    proc = subprocess.run([sys.executable, "-P", str(ROOT / "benchmarks" / "bench_update_over.py"), "--rounds", "1",
                           "2x2x8x4", "seq:2x2x8x8"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| 2x2x8x4") or line.startswith("| seq")]
    assert len(rows) == 2 and all("bit-identical" in row for row in rows)
