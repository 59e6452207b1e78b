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


def _compared(qtbot, panel: RunsPanel) -> str:
    """The several-run detail once its worker has made it (the selection shows "comparing…" first)."""
    qtbot.waitUntil(lambda: not panel.comparer.busy(), timeout=20_000)
    return panel.detail.toPlainText()


def test_selecting_several_runs_says_which_settings_differ_and_which_did_best(qtbot, tmp_path):
    a = _run(tmp_path, "coupling-20261206-140000", {}, {"loss": 0.6, "val_loss": 0.55})
    b = _run(tmp_path, "coupling-20261206-141500", {"lr": 0.01, "optimizer": "sgd"},
             {"loss": 0.4, "val_loss": 0.35})
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(tmp_path, "coupling")
    panel.select_paths([a, b])
    text = _compared(qtbot, panel)
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
    text = _compared(qtbot, panel)
    assert "the same settings" in text
    assert "lowest loss: coupling-20261206-141500 (0.5)" in text


def test_compare_settings_spells_values_as_the_project_file_and_counts_in_english(qtbot):
    """Compare Settings of a uint8 run read '1 setting differ: data', its scale_uint8 'True'
    beside grad_clip 'null': Python's spelling of a boolean beside JSON's of a null."""
    from PySide6.QtWidgets import QLabel

    from revstudio.qt.training.compare_dialog import CompareDialog

    dialog = CompareDialog("run-1", {"scale_uint8": True, "grad_clip": None, "lr": 0.1},
                           {"scale_uint8": False, "grad_clip": None, "lr": 0.1})
    qtbot.addWidget(dialog)
    assert dialog.findChild(QLabel).text() == "1 setting differs: scale_uint8"
    cells = {dialog.table.item(i, 0).text(): (dialog.table.item(i, 1).text(), dialog.table.item(i, 2).text())
             for i in range(dialog.table.rowCount())}
    assert cells["scale_uint8"] == ("true", "false")
    assert cells["grad_clip"] == ("null", "null")


def test_a_runs_settings_in_its_detail_are_spelled_as_in_compare_settings(qtbot, tmp_path):
    """One run's detail listed 'scale_uint8: True' and 'grad_clip: None' where Compare Settings
    said 'null': the same setting spelled two ways in two places."""
    a = _run(tmp_path, "coupling-20261206-140000", {"scale_uint8": True, "grad_clip": None}, {"loss": 0.6})
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(tmp_path, "coupling")
    panel.select_paths([a])
    text = panel.detail.toPlainText()
    assert "scale_uint8: true" in text and "grad_clip: null" in text, text


def test_a_refused_runs_failure_stays_in_the_detail_when_its_folder_goes(qtbot, tmp_path):
    """A run the worker refused (bad data) has its folder removed; the folder watcher's reload then
    emptied the detail, so once the error dialog was closed the Runs tab showed no trace of why,
    only the progress line's 'failed · step 0' naming a run the table did not list."""
    a = _run(tmp_path, "coupling-20261206-140000", {}, {"loss": 0.6})
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(tmp_path, "coupling")
    panel.show_failure("Run coupling-20261206-150000 failed: data.npz: array 'x' has samples of shape 5x8x8")
    panel.reload()  # what the watcher does when the refused run's folder is removed
    assert "array 'x' has samples" in panel.detail.toPlainText()
    panel.select_paths([a])  # a run picked: its own detail
    assert panel.detail.toPlainText().startswith("coupling-20261206-140000: finished")
    panel.clear_failure()  # (a new run starts)
    panel.select_paths([])
    assert "array 'x'" not in panel.detail.toPlainText()


def test_several_runs_name_the_environment_and_digests_that_differ_and_whether_the_losses_do(qtbot, tmp_path):
    """Two runs of the same settings read 'the same settings' though one ran on 2 threads and its losses
    parted at step 10: the Runs tab now compares what `revstudio runs A B` does."""
    a = _run(tmp_path, "coupling-20261206-140000", {}, {"loss": 0.6})
    b = _run(tmp_path, "coupling-20261206-141500", {}, {"loss": 0.6})
    c = _run(tmp_path, "coupling-20261206-143000", {}, {"loss": 0.6})
    for path, threads, loss in ((a, 1, 2.281650519371033), (b, 2, 2.2816505670547484), (c, 1, 2.281650519371033)):
        (path / "environment.json").write_text(json.dumps({"torch": "2.13.0", "threads": threads}))
        status = json.loads((path / "status.json").read_text())
        (path / "status.json").write_text(json.dumps({**status, "network_digest": "sha256:" + "ab" * 32}))
        (path / "metrics.jsonl").write_text(json.dumps({"kind": "step", "step": 10, "loss": loss}) + "\n")
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(tmp_path, "coupling")
    panel.select_paths([a, b, c])
    text = _compared(qtbot, panel)
    differ = text.split("settings that differ:", 1)[1].split("\n\n")[0].splitlines()
    assert differ[1] == "  threads:" and len(differ) == 5, text  # (torch, the digest: the same in all three)
    assert sorted(differ[2:]) == ["    coupling-20261206-140000  1", "    coupling-20261206-141500  2",
                                  "    coupling-20261206-143000  1"], text
    newest, oldest = "coupling-20261206-143000", "coupling-20261206-140000"  # (the table lists newest first)
    assert f"  {newest}, {oldest}: identical (1 row)" in text, text
    assert (f"  coupling-20261206-141500: part from {newest} at step 10 (loss 2.2816505670547484 "
            "vs 2.281650519371033)") in text, text
