"""A saved run read to its end holds its points, not room grown for more (benchmarks/bench_run_memory.py).

Each curve's buffer doubles as points arrive, up to 2^18 points: a 200,000-step run read from its folder
kept room for 262,144 points in each of its long curves, a quarter of its 31.7 MB never used.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from revstudio.qt.plots.rows import RunData, SavedRows, read_metrics
from revstudio.qt.plots.series import COLUMNS


def _rows(path: Path, steps: int) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for s in range(1, steps + 1):
            fh.write(json.dumps({"kind": "step", "step": s, "epoch": s / 700, "time": s * 0.01,
                                 "loss": 2.0 / (1 + s * 0.37), "accuracy": (s % 97) / 97}) + "\n")
            if s % 500 == 0:
                fh.write(json.dumps({"kind": "val", "step": s, "val_loss": 1.0 / s}) + "\n")
    return path


def _columns(run: RunData) -> dict[str, np.ndarray]:
    return {name: np.stack([s.column(c) for c in COLUMNS]) for name, s in run.series.items()}


def test_a_saved_run_read_to_its_end_keeps_no_spare_room_and_the_same_points(tmp_path) -> None:
    path = _rows(tmp_path / "metrics.jsonl", 3_000)
    whole = RunData("whole")
    whole.feed_lines(path.read_bytes().splitlines())  # (as before: rows filed, the room left as grown)
    assert whole.series["loss"]._data.shape[1] == 4096  # (what the doubling reaches for 3,000 points)
    run = RunData("saved")
    load = SavedRows(path, run)
    while not load.pump(50):
        pass
    assert {name: s._data.shape[1] for name, s in run.series.items()} == {name: len(s) for name, s in
                                                                          run.series.items()}
    before, after = _columns(whole), _columns(run)
    assert before.keys() == after.keys()
    assert all(np.array_equal(before[k], after[k], equal_nan=True) for k in before)
    assert read_metrics(path).series["loss"]._data.shape[1] == 3_000
    # a resumed run goes on filing into it: the room grows again
    run.feed({"kind": "step", "step": 3_001, "loss": 0.25})
    assert len(run.series["loss"]) == 3_001 and run.series["loss"].last() == 0.25
    assert run.series["loss"].last("step") == 3_001 and run.series["loss"].column("value")[0] == 2.0 / 1.37
