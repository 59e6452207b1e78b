"""docs/data.md's "Class labels per pixel" example runs as written: its Python writes a small synthetic
segmentation set (squares in 16x16 images, the left border masked) and a segmenter, its train command
trains them, the loss goes down, and the per-pixel accuracy (over the scored pixels only) rises well above
the background's share."""
from __future__ import annotations

import json

from training_kit import data_md_example_rows


def test_the_segmentation_example_writes_data_that_its_command_trains(tmp_path, monkeypatch, capsys):
    rows = data_md_example_rows("Class labels per pixel", tmp_path, monkeypatch, capsys, log_every=20, val_every=100)
    started = next(r for r in rows if r.get("event") == "started")
    assert "a class per pixel" in started["inputs"] and "'mask' mark the rest" in started["inputs"]
    steps = [r for r in rows if r["kind"] == "step"]
    assert steps[-1]["loss"] < steps[0]["loss"] / 5, [r["loss"] for r in steps]
    # (20 batches of 32 a row, each image's 16 x 14 pixels right of the masked border)
    assert all(r["pixels_scored"] == 20 * 32 * 16 * 14 for r in steps) and "steps_scored" not in steps[0]
    val = [r for r in rows if r["kind"] == "val"][-1]
    assert val["val_accuracy"] > 0.95 and val["val_pixels_scored"] == 26 * 16 * 14, val
    status = json.loads((tmp_path / "run" / "status.json").read_text(encoding="utf-8"))
    assert status["metrics"]["pixels_scored"] > 0 and status["metrics"]["val_pixels_scored"] == 26 * 16 * 14
