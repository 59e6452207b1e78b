"""benchmarks/bench_suite_time.py on a folder of two small test files: a row per file, the totals,
pytest's own exit status (a failing test is a failing run)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_suite_time_table_has_a_row_per_file_and_the_run_s_totals(tmp_path: Path) -> None:
    (tmp_path / "test_quick.py").write_text("def test_one():\n    pass\n\n\ndef test_two():\n    pass\n",
                                            encoding="utf-8")
    (tmp_path / "test_slow.py").write_text("import time\n\n\ndef test_sleeps():\n    time.sleep(0.3)\n"
                                           "\n\ndef test_fails():\n    raise AssertionError('on purpose')\n",
                                           encoding="utf-8")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_suite_time.py"), "--tree", str(tmp_path),
                           "test_quick.py", "test_slow.py"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "1 failed, 3 passed" in lines[0]
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1:] for line in lines if line.startswith("| test_")}
    assert list(rows) == ["test_slow.py", "test_quick.py"]  # by wall time, the sleeping file first
    assert rows["test_slow.py"][0] == "2" and float(rows["test_slow.py"][1]) >= 0.3
    assert rows["test_quick.py"][0] == "2"
    assert any(line.startswith("| **all 2 files** | 4 |") for line in lines)
    assert lines[-1].startswith("wall ") and lines[-1].endswith("exit 1")
