"""``revstudio runs`` and the app's Runs tab read a run's status from its folder alike.

The tab showed a run whose process died (SIGKILL, a crash, a power cut) and a run with no readable
status as "failed" with reasons of its own, while ``revstudio runs`` said "killed" and "unknown" with
other words. Both now take status and reason from one reading of the folder (run_status.decide):
the same folders give the same words in both, and an unknown run says why.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from revstudio.cli import main
from revstudio.core.processes import host, process_stamp
from revstudio.qt.runs.panel import RunsPanel
from revstudio.qt.runs.run_table import STATUS
from revstudio.qt.training.words import in_app_words


def _gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _folders(root: Path) -> dict[str, str]:
    """Run folders of every kind of ending, and the status each must read as."""
    def status(name: str, text: str | None = None, **fields: Any) -> Path:
        path = root / name
        path.mkdir()
        if text is not None or fields:
            (path / "status.json").write_text(text if text is not None else json.dumps(fields), encoding="utf-8")
        return path

    killed = status("sigkilled", status="running", pid=_gone_pid(), step=7, started="2026-01-01T00:00:00+00:00")
    (killed / "checkpoints").mkdir()
    (killed / "checkpoints" / "last.pt").write_bytes(b"x")
    (killed / "metrics.jsonl").write_text('{"kind": "step", "step": 9}\n{"kind": "st', encoding="utf-8")
    # the pid is alive but is another program (this test's own process; the run's start stamp differs)
    status("pid-reused", status="running", pid=os.getpid(), process="another-boot:1", step=2)
    status("elsewhere", status="running", pid=os.getpid(), host=host() + "-other-machine", step=3)
    no_status = status("no-status")
    (no_status / "metrics.jsonl").write_text('{"kind": "step", "step": 4}\n', encoding="utf-8")
    (status("snapshot-only") / "project.revs").write_text("{}", encoding="utf-8")
    status("damaged", text='{"status": "runn')
    status("odd-word", status="paused")
    status("finished", status="finished", step=5, message="done")
    status("live", status="running", pid=os.getpid(), host=host(), process=process_stamp(os.getpid()), step=1)
    return {"sigkilled": "killed", "pid-reused": "killed", "elsewhere": "unknown", "no-status": "unknown",
            "snapshot-only": "unknown", "damaged": "unknown", "odd-word": "unknown", "finished": "finished",
            "live": "running"}


def test_the_cli_and_the_runs_tab_say_the_same_of_the_same_folders(qtbot, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    expected = _folders(tmp_path)
    assert main(["runs", str(tmp_path), "--json"]) == 0
    cli = {r["name"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    assert {n: r["status"] for n, r in cli.items()} == expected

    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(tmp_path)
    shown = {panel.table.item(row, 0).text(): panel.table.item(row, STATUS).text()
             for row in range(panel.table.rowCount())}
    assert shown == expected
    for name in expected:
        entry = panel.entry(tmp_path / name)
        assert entry is not None and entry.message == cli[name]["message"], name
        assert entry.step == (cli[name]["step"] or 0), name

    reasons = {n: r["message"] or "" for n, r in cli.items()}
    assert "its process" in reasons["sigkilled"] and "last row is step 9" in reasons["sigkilled"]
    assert "--resume continues it" in reasons["sigkilled"] and cli["sigkilled"]["step"] == 9
    assert "no checkpoint" in reasons["pid-reused"]
    assert host() + "-other-machine" in reasons["elsewhere"] and "look on that machine" in reasons["elsewhere"]
    assert "status.json is missing" in reasons["no-status"] and "step 4" in reasons["no-status"]
    assert "never have started" in reasons["snapshot-only"]
    assert "unreadable" in reasons["damaged"] and "'paused'" in reasons["odd-word"]

    # the printed table and its notes: the same words, each unknown run with why
    assert main(["runs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in ("elsewhere", "no-status", "snapshot-only", "damaged", "odd-word", "sigkilled"):
        assert f"{name}: {reasons[name]}" in out, name

    # the tab's detail of a selected run says what the CLI says (its flags as the app's buttons), and a
    # killed run can be resumed
    panel.select_paths([tmp_path / "sigkilled"])
    detail = panel.detail.toPlainText()
    assert detail.startswith("sigkilled: killed") and in_app_words(reasons["sigkilled"]) in detail
    assert panel.buttons["resume"].isEnabled()
