"""Several runs selected in the Runs tab: which settings differ between them, and which did best."""
from __future__ import annotations

import json
from pathlib import Path

from revstudio.qt.runs.panel import RunsPanel


def _run(root: Path, name: str, config: dict, metrics: dict, status: str = "finished") -> Path:
    path = root / name
    path.mkdir(parents=True)
    (path / "status.json").write_text(json.dumps({"status": status, "step": 400, "total_steps": 400,
                                                  "metrics": metrics, "started": "2026-12-06T14:00:00"}))
    base = {"data": "synthetic", "optimizer": "adam", "lr": 0.001, "batch_size": 4, "seed": 0, "steps": 400}
    (path / "config.json").write_text(json.dumps({**base, **config}))
    return path


def test_selecting_several_runs_says_which_settings_differ_and_which_did_best(qtbot, tmp_path):
    a = _run(tmp_path, "coupling-20261206-140000", {}, {"loss": 0.6, "val_loss": 0.55})
    b = _run(tmp_path, "coupling-20261206-141500", {"lr": 0.01, "optimizer": "sgd"},
             {"loss": 0.4, "val_loss": 0.35})
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(tmp_path, "coupling")
    panel.select_paths([a, b])
    text = panel.detail.toPlainText()
    assert "2 runs selected" in text
    differ = text.split("settings that differ:", 1)[1]
    assert "lr:" in differ and "0.001" in differ and "0.01" in differ
    assert "optimizer:" in differ and "adam" in differ and "sgd" in differ
    assert "batch_size" not in differ and "seed" not in differ  # the same in both: not listed
    assert "lowest val loss: coupling-20261206-141500 (0.35)" in text


def test_runs_with_the_same_settings_say_so(qtbot, tmp_path):
    a = _run(tmp_path, "coupling-20261206-140000", {}, {"loss": 0.6})
    b = _run(tmp_path, "coupling-20261206-141500", {}, {"loss": 0.5})
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(tmp_path, "coupling")
    panel.select_paths([a, b])
    text = panel.detail.toPlainText()
    assert "the same settings" in text
    assert "lowest loss: coupling-20261206-141500 (0.5)" in text
