"""The Runs tab's detail of a run with a checkpoint names the run's model.py and how the weights load
into it: the run folder held the network as PyTorch code, but the app said only where the checkpoint was."""
from __future__ import annotations

import json

from revstudio.qt.runs.panel import RunsPanel


def test_a_runs_detail_names_its_code_and_how_its_weights_load(qtbot, tmp_path):
    path = tmp_path / "coupling-20261207-071000"
    (path / "checkpoints").mkdir(parents=True)
    (path / "status.json").write_text(json.dumps({"status": "finished", "step": 3}))
    (path / "checkpoints" / "last.pt").write_bytes(b"PK\x03\x04")
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(tmp_path, "coupling")
    panel.select_paths([path])
    assert not [ln for ln in panel.detail.toPlainText().splitlines() if ln.startswith("code: ")]
    (path / "model.py").write_text("class Model: ...\n")
    panel.reload()
    panel.select_paths([path])
    (line,) = [ln for ln in panel.detail.toPlainText().splitlines() if ln.startswith("code: ")]
    assert str(path / "model.py") in line and "from model import Model" in line and "load_state_dict" in line
