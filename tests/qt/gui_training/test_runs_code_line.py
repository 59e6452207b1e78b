"""The Runs tab's detail of a run with a checkpoint names the run's model.py and how the weights load
into it: the run folder held the network as PyTorch code, but the app said only where the checkpoint was."""
from __future__ import annotations

import json
import re

from cuda_kit import saved_as_cuda

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


def test_the_load_the_detail_shows_reads_a_checkpoint_a_gpu_machine_wrote(qtbot, tmp_path):
    import torch

    path = tmp_path / "coupling-20261207-071500"
    (path / "checkpoints").mkdir(parents=True)
    (path / "status.json").write_text(json.dumps({"status": "finished", "step": 3}))
    (path / "model.py").write_text("class Model: ...\n")
    weights = {"head.weight": torch.arange(6.0).reshape(2, 3)}
    with saved_as_cuda():  # (its storages tagged cuda:0: plain torch.load refuses it on this machine)
        torch.save({"model": weights}, path / "checkpoints" / "last.pt")
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(tmp_path, "coupling")
    panel.select_paths([path])
    (line,) = [ln for ln in panel.detail.toPlainText().splitlines() if ln.startswith("code: ")]
    load = re.search(r"(torch\.load\(checkpoint.*?\)\['model'\])", line)
    assert load is not None, line
    loaded = eval(load.group(1), {"torch": torch, "checkpoint": str(path / "checkpoints" / "last.pt")})  # noqa: S307
    assert torch.equal(loaded["head.weight"], weights["head.weight"])
