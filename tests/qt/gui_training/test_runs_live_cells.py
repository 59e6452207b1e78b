"""The Runs table follows a running run's own files: its step and loss cells used to stay as they
were when the table was last reloaded (a run appearing or going), lagging the whole run, whether it
was started here or by ``revstudio train`` in a terminal."""
from __future__ import annotations

import json
import os
from pathlib import Path

from PySide6.QtCore import Qt

from revstudio.qt.runs.panel import RunsPanel
from revstudio.qt.runs.run_table import COLUMNS
from revstudio.training.runs import write_json

STEP, LOSS, STATUS = COLUMNS.index("step"), COLUMNS.index("loss"), COLUMNS.index("status")
MARK = Qt.ItemDataRole.UserRole + 7


def _status(path: Path, status: str, step: int, loss: float) -> None:
    # as the worker writes it: replaced atomically, the process alive (this one)
    write_json(str(path / "status.json"), {"status": status, "pid": os.getpid(), "step": step, "total_steps": 100,
                                           "metrics": {"loss": loss}, "started": "2026-12-06T14:00:00"})


def _run(root: Path, name: str, status: str, step: int, loss: float) -> Path:
    path = root / name
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"mode": "reversible", "lr": 0.001, "batch_size": 8}))
    _status(path, status, step, loss)
    return path


def _row(panel: RunsPanel, path: Path) -> int:
    return next(r for r in range(panel.table.rowCount()) if panel.table.item(r, 0).text() == path.name)


def test_a_running_runs_step_and_loss_follow_its_status_without_a_reload(qtbot, tmp_path, monkeypatch) -> None:
    root = tmp_path / "runs"  # (not tmp_path itself, where the test's settings file is written)
    done = _run(root, "coupling-20261206-140000", "finished", 100, 0.5)
    live = _run(root, "coupling-20261206-150000", "running", 10, 2.0)
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(root, "coupling")
    panel.table.sortByColumn(LOSS, Qt.SortOrder.AscendingOrder)
    panel.table.selectRow(_row(panel, live))
    assert panel.selected_paths() == [live]
    for row in range(2):
        panel.table.item(row, 0).setData(MARK, "kept")  # gone if the table were filled again
    reloads = []
    reload = RunsPanel.reload
    monkeypatch.setattr(RunsPanel, "reload", lambda self: (reloads.append(1), reload(self))[1])
    _status(live, "running", 60, 0.25)  # the run's own file: its folder neither comes nor goes
    qtbot.waitUntil(lambda: panel.table.item(_row(panel, live), STEP).text() == "60 / 100", timeout=10_000)
    row = _row(panel, live)
    assert panel.table.item(row, LOSS).text() == "0.25" and reloads == []
    assert row == 0 and _row(panel, done) == 1  # sorted again by loss: 0.25 now before 0.5
    assert all(panel.table.item(r, 0).data(MARK) == "kept" for r in range(2))
    assert panel.selected_paths() == [live] and panel.table.selectionModel().isRowSelected(0)
    assert panel.poll.isActive()  # (a run is running: its status is looked at)
    _status(live, "finished", 100, 0.2)
    qtbot.waitUntil(lambda: panel.table.item(_row(panel, live), STATUS).text() == "finished", timeout=10_000)
    assert panel.table.item(_row(panel, live), STEP).text() == "100 / 100"
    assert not panel.poll.isActive()  # (nothing running: nothing polled)
    assert "finished" in panel.detail.toPlainText()  # (the selected run's detail follows)


def test_a_run_listed_before_its_worker_wrote_its_status_is_followed_once_it_does(qtbot, tmp_path) -> None:
    # a run folder seen the moment it was made (by `revstudio train` in a terminal) has no status.json
    # yet: listed as unknown with why (as `revstudio runs` lists it), it stayed so after the worker wrote
    # "running" into it
    root = tmp_path / "runs"
    young = root / "coupling-20261206-160000"
    young.mkdir(parents=True)
    (young / "metrics.jsonl").write_text("")
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(root, "coupling")
    assert panel.table.item(0, STATUS).text() == "unknown"
    _status(young, "running", 5, 1.5)
    qtbot.waitUntil(lambda: panel.table.item(0, STATUS).text() == "running", timeout=10_000)
    assert panel.table.item(0, STEP).text() == "5 / 100" and panel.poll.isActive()


def test_a_run_on_another_machine_is_followed_until_it_ends(qtbot, tmp_path) -> None:
    # a shared runs folder: a run another machine trains is listed as unknown (its process cannot be
    # seen from here), and its status.json, which that machine keeps writing, was read only on a reload
    from revstudio.core.processes import host

    root = tmp_path / "runs"
    far = _run(root, "coupling-20261206-170000", "running", 5, 1.5)
    status = json.loads((far / "status.json").read_text())
    write_json(str(far / "status.json"), {**status, "host": host() + "-elsewhere"})
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(root, "coupling")
    assert panel.table.item(0, STATUS).text() == "unknown" and panel.poll.isActive()
    write_json(str(far / "status.json"), {**status, "host": host() + "-elsewhere", "status": "finished", "step": 100})
    qtbot.waitUntil(lambda: panel.table.item(0, STATUS).text() == "finished", timeout=10_000)
    assert panel.table.item(0, STEP).text() == "100 / 100" and not panel.poll.isActive()
