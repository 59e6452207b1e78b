"""docs/data.md's "Class labels per step" example runs as written: its Python writes a padded tagging
set and project, its train command trains them, and the per-step accuracy the run reports (over the
scored steps only) rises well above chance."""
from __future__ import annotations

from training_kit import data_md_example_rows


def test_the_tagging_example_writes_data_that_its_command_trains(tmp_path, monkeypatch, capsys):
    rows = data_md_example_rows("Class labels per step", tmp_path, monkeypatch, capsys, log_every=50, val_every=0)
    started = next(r for r in rows if r.get("event") == "started")
    assert "a class per step" in started["inputs"] and "'lengths' and labels of -100 mark the rest" in started["inputs"]
    val = [r for r in rows if r["kind"] == "val"][-1]
    assert val["val_accuracy"] > 0.9 and 0 < val["val_steps_scored"] < 26 * 20
