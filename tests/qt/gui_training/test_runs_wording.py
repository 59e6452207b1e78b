"""The Runs tab's words for a killed run and a run folder that cannot be made.

A killed run's detail said "killed" twice (its folder's guess and what the app saw); a run folder
blocked by a file ended at "Not a directory", with no next step.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from revstudio.qt.plots.rows import RunData
from revstudio.qt.runs.panel import RunsPanel
from revstudio.qt.runs.run_table import PATH_ROLE


def test_a_killed_run_seen_live_is_described_once(qtbot, tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    path = tmp_path / "coupling-20261206-215134"
    path.mkdir()
    (path / "status.json").write_text(json.dumps({"status": "running", "pid": child.pid, "step": 3}))
    panel = RunsPanel()
    qtbot.addWidget(panel)
    live = RunData(path.name)
    live.status, live.message = "failed", "the worker process was killed"
    panel.live[path] = live
    panel.set_root(tmp_path, "coupling")
    panel.select_paths([path])
    lines = panel.detail.toPlainText().splitlines()
    assert [ln for ln in lines if "killed" in ln] == ["the worker process was killed"], lines


def test_a_runs_folder_blocked_by_a_file_says_what_to_do(qtbot, train_window, dialogs):
    window = train_window()
    blocker = Path(window.document.path).parent / "runs"
    blocker.write_text("not a folder")
    reason = window.training.train()
    assert reason is not None and "Not a directory" in reason
    assert f"{blocker} is a file" in reason and "move or rename it" in reason and "Save As" in reason, reason
    assert not window.training.controller.running


def test_a_run_whose_disk_filled_is_listed_with_its_failure_not_as_killed(qtbot, train_window, dialogs,
                                                                           fake_worker):
    """The worker could not rewrite status.json (still "running", its process gone): the Runs tab
    and `revstudio runs` said "killed" from then on, though the app had read the failure live."""
    from revstudio.training.runs import read_run

    fake_worker(fail_at=3, disk_full=True)
    window = train_window()
    window.training.train()
    ctl = window.training.controller
    qtbot.waitUntil(lambda: ctl.run is not None and ctl.run.ended and not ctl.running, timeout=60_000)
    info = read_run(str(ctl.run_dir))
    assert info.status == "failed" and "No space left on device" in (info.message or ""), info
    window.training.runs_panel.live.clear()  # as the tab reads it after a restart
    window.training.runs_panel.reload()
    entry = window.training.runs_panel.entry(ctl.run_dir)
    assert entry is not None and "No space left on device" in (entry.message or "") and not entry.guessed


def test_a_run_started_from_weights_says_so_in_its_row_and_its_detail(qtbot, tmp_path):
    """The weights a run started from (train --init) were only in its detail, shown once selected."""
    for name, init in (("coupling-1", str(tmp_path / "mine.pt")), ("coupling-2", None)):
        path = tmp_path / name
        path.mkdir()
        (path / "status.json").write_text(json.dumps({"status": "finished", "step": 1, "total_steps": 1,
                                                      "message": "done"}))
        (path / "metrics.jsonl").write_text(json.dumps({"event": "started", "init_from": init}) + "\n")
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(tmp_path, "coupling")
    tips = {panel.table.item(row, 0).data(PATH_ROLE): panel.table.item(row, 0).toolTip()
            for row in range(panel.table.rowCount())}
    assert tips[str(tmp_path / "coupling-1")] == f"done\nstarted from weights: {tmp_path / 'mine.pt'}"
    assert tips[str(tmp_path / "coupling-2")] == "done"
    panel.select_paths([tmp_path / "coupling-1"])
    assert f"started from weights: {tmp_path / 'mine.pt'}" in panel.detail.toPlainText().splitlines()
