"""The size sweep, the memory-budget, the update-over-F and the float32-streams benchmarks run end to end on tiny cells, so they cannot rot."""
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


def _cell(cell: list, plain_s: float, floor: float, ratios: dict[str, float], peaks: dict[str, int]) -> dict:
    return {"cell": cell, "floor": floor,
            "columns": {"plain": {"cpu_seconds": plain_s, "ratio": 1.0, "peak_bytes": 1},
                        **{k: {"ratio": v, "peak_bytes": peaks.get(k, 1)} for k, v in ratios.items()}}}


def test_the_proposed_targets_are_checked_from_the_cells() -> None:
    """The sweep prints the proposed targets (benchmarks/README.md) as met or not: the float32-stream
    runtime against RevLib, and the default against RevLib, per cell split by the
    size of a stream value (tiny cells apart, the same split on every machine)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_sweep as sweep
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    cells = [
        _cell(["conv", 2, 8, 4, 2], 1.5e-3, 1.3, {"revstudio": 2.6, sweep.F32: 1.9, "revlib": 2.0}, {}),
        _cell(["conv", 16, 32, 16, 8], 20e-3, 1.3, {"revstudio": 1.5, sweep.F32: 1.3, "revlib": 1.4}, {}),
    ]
    checks = {name: (ok, got) for name, ok, got in sweep.proposed(cells)}
    assert checks["float32-stream runtime <= RevLib at the median"] == (True, "0.94")
    assert checks["default <= 1.10x RevLib at the median"] == (False, "1.19")  # (1.3 + 1.07) / 2
    assert checks["default <= 1.25x RevLib in every other cell"] == (True, "worst 1.07 (8x16x32x16)")
    assert not any("floor" in name for name in checks)  # no floor target is proposed
    # a 2x8x4x4 stream value is 1,024 B: tiny, whatever its plain step took
    assert checks["default <= 1.45x RevLib in cells of stream values under 4096 B"] == (True, "worst 1.30 (2x2x8x4)")
    assert not any("peak" in name for name in checks)  # the issue's own peak target is in the summary
    assert sweep.proposed([{k: v for k, v in cells[1].items()} | {"columns": {
        k: v for k, v in cells[1]["columns"].items() if k != "revlib"}}]) == []  # no RevLib: nothing to check


@pytest.mark.slow
def test_bench_float32_streams_runs_one_draw() -> None:
    proc = subprocess.run([sys.executable, "-P", str(ROOT / "benchmarks" / "bench_float32_streams.py"),
                           "--depths", "2", "--seeds", "1", "--scales", "1"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = [line for line in proc.stdout.splitlines() if line.startswith("| 1 | 2 |")]
    assert "0/1" in row  # one draw at the default init and 2 blocks: float32 streams within 1.5x plain's


@pytest.mark.slow
def test_bench_overlap_quick_gives_plains_gradients(tmp_path: Path) -> None:
    """The hand-written reversible backward of bench_overlap (serial and in the overlapped
    order; on the CPU one stream) gives plain autograd's gradients, so what the GPU run times
    is a correct backward."""
    out = tmp_path / "overlap.json"
    proc = subprocess.run([sys.executable, "-P", str(ROOT / "benchmarks" / "bench_overlap.py"), "--device", "cpu",
                           "--quick", "--json", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "overlap gain" in proc.stdout
    cells = json.loads(out.read_text())["cells"]
    for cell in cells:
        for name in ("serial", "overlapped", "revstudio"):
            assert cell["columns"][name]["grad_vs_plain"] < 1e-5, (cell["cell"], name)
        assert cell["floor"] > 1 and cell["columns"]["plain"]["ratio"] == 1.0


def _depth_error_module():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_depth_error
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return bench_depth_error


def test_the_depth_error_verdict_compares_distributions_not_single_draws() -> None:
    """One draw's ratio to plain is a lottery at depth; the target compares medians over the
    draws, and the counts show who lost the lottery on how many draws, both ways."""
    bench = _depth_error_module()
    errs = {"plain": [1e-6, 5e-4, 1e-6, 3e-4, 1e-6],
            "revstudio": [4e-4, 6e-7, 8e-7, 6e-7, 2e-4],  # loses twice badly, wins twice, ties once
            "revstudio-f32streams": [8e-4, 9e-4, 7e-4, 1e-3, 6e-4]}
    rows = {r["column"]: r for r in bench.rows(errs)}
    assert rows["plain"]["median_over_plain"] == 1.0 and rows["plain"]["worse"] == 0
    assert rows["revstudio"]["median"] == 8e-7 and rows["revstudio"]["median_over_plain"] == pytest.approx(0.8)
    assert (rows["revstudio"]["worse"], rows["revstudio"]["better"]) == (2, 2)
    assert rows["revstudio-f32streams"]["median_over_plain"] == pytest.approx(800.0)
    assert (rows["revstudio-f32streams"]["worse"], rows["revstudio-f32streams"]["better"]) == (5, 0)
    text = bench.table("4x2x8x4", bench.rows(errs))
    assert "| 4x2x8x4 | revstudio | 8e-07 | 0.80 |" in text and "| 2/5 | 2/5 |" in text


@pytest.mark.slow
def test_bench_depth_error_runs_a_tiny_cell() -> None:
    proc = subprocess.run([sys.executable, "-P", str(ROOT / "benchmarks" / "bench_depth_error.py"), "--cells",
                           "3x2x8x4", "--draws", "3"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| 3x2x8x4 |")]
    assert {line.split(" | ")[1] for line in rows} >= {"plain", "revstudio", "revstudio-f32streams",
                                                        "revstudio-f64streams"}
    assert "target (default's median error at most 1.5x plain's) on 3x2x8x4: met" in proc.stdout
    bad = subprocess.run([sys.executable, "-P", str(ROOT / "benchmarks" / "bench_depth_error.py"), "--draws", "0"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and "--draws 0 is too small; use at least 1" in bad.stderr


def test_the_sweep_points_a_lost_lottery_to_the_depth_error_bench() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_sweep as sweep
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))

    def cell(default: list[float], plain: list[float]) -> dict:
        return {"cell": ["conv", 16, 32, 16, 64], "columns": {"revstudio": {"grad_errors": default, "grad_error": default[0]},
                                                               "plain": {"grad_errors": plain, "grad_error": plain[0]}}}

    assert sweep._lost_lottery(cell([4.8e-4, 6.7e-4, 6.0e-4], [1e-6, 1.1e-3, 1.1e-6]))  # the 64-block cell, 2026-12-04
    assert not sweep._lost_lottery(cell([6e-7, 6e-7, 2.4e-4], [1e-6, 5e-4, 2.4e-4]))
