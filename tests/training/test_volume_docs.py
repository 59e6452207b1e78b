"""docs/data.md's "Class labels per voxel" example runs as written: its Python writes a small set of
volumes (a bright box through two of four slices, the last slice masked) and a volume segmenter, its train
command trains them, the loss goes down, the rows count the scored voxels as ``voxels_scored`` and the
per-voxel accuracy (over the scored voxels only) rises well above the background's share (about 88 %)."""
from __future__ import annotations

import json

from training_kit import data_md_example_rows


def test_the_volume_example_writes_data_that_its_command_trains(tmp_path, monkeypatch, capsys):
    rows = data_md_example_rows("Class labels per voxel", tmp_path, monkeypatch, capsys, log_every=15, val_every=75)
    started = next(r for r in rows if r.get("event") == "started")
    assert "a class per voxel" in started["inputs"] and "'mask' mark the rest" in started["inputs"]
    steps = [r for r in rows if r["kind"] == "step"]
    assert steps[-1]["loss"] < steps[0]["loss"] / 10, [r["loss"] for r in steps]
    # (15 batches of 32 a row, each volume's 3 labelled slices of 12 x 12)
    assert all(r["voxels_scored"] == 15 * 32 * 3 * 12 * 12 for r in steps) and "pixels_scored" not in steps[0]
    val = [r for r in rows if r["kind"] == "val"][-1]
    assert val["val_accuracy"] > 0.98 and val["val_voxels_scored"] == 13 * 3 * 12 * 12, val
    status = json.loads((tmp_path / "run" / "status.json").read_text(encoding="utf-8"))
    assert status["metrics"]["voxels_scored"] > 0 and status["metrics"]["val_voxels_scored"] == 13 * 3 * 12 * 12
