"""The RevNet benchmark runs end to end in --quick mode, so it cannot rot."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_revnet_quick(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_revnet.py"), "--quick", "--threads", "1",
         "--columns", "plain", "checkpoint", "revstudio", "--json", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "| N | column | fwd+bwd s |" in proc.stdout
    data = json.loads(out.read_text())
    assert [row["blocks"] for row in data["rows"]] == [2, 4]
    for row in data["rows"]:
        assert set(row["columns"]) == {"plain", "checkpoint", "revstudio"}
        for col in row["columns"].values():
            assert col["seconds"] > 0 and col["peak_bytes"] >= col["kept_bytes"] > 0
            assert col["grad_error"] < 1e-5  # float32 against the float64 reference
    kept = [row["columns"]["revstudio"]["kept_bytes"] for row in data["rows"]]
    assert kept[0] == kept[1]
    assert "kept-after-forward over N=2/4" in proc.stdout and "flat" in proc.stdout
    for row in data["rows"]:  # plain's no-grad forward, for the recompute floor
        assert 0 < row["plain_forward"]["seconds"]
    assert "recompute floor" in proc.stdout
