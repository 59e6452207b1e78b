"""A resume keeps the run's first start and counts only the time trained, not the pause before it."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from revstudio import cli
from revstudio.training import loop, runs

PROJECT = {
    "format": "revstudio", "version": 1, "name": "tiny",
    "nodes": [{"id": "x", "type": "Input", "params": {"shape": [4]}},
              {"id": "h", "type": "Linear", "params": {"out_features": 3}},
              {"id": "y", "type": "Output", "params": {}}],
    "edges": [["x.out", "h.in"], ["h.out", "y.in"]],
    "groups": {}, "training": {"data": "d.npz"}, "view": {},
}
FLAGS = ["--batch-size", "8", "--device", "cpu", "--json", "--checkpoint-every", "0", "--gradcheck-every", "0",
         "--memory-every", "0", "--val-every", "0"]
FIRST, FIRST_END = "2026-01-01T10:00:00+00:00", "2026-01-01T10:01:00+00:00"  # a minute trained, a year ago


def _stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """A run stopped by a signal after step 2 of 4, its times set back to ``FIRST`` .. ``FIRST_END``."""
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", x=rng.standard_normal((16, 4)).astype("float32"), y=rng.integers(0, 3, 16))
    (tmp_path / "tiny.revs").write_text(json.dumps(PROJECT))
    real, count = loop._allreduce, [0]

    def stop_at_step_2(values, dist, device):
        count[0] += 1
        return [*values[:4], 1.0 if count[0] == 2 else values[4], *values[5:]]

    monkeypatch.setattr(loop, "_allreduce", stop_at_step_2)
    out = tmp_path / "run"
    assert cli.main(["train", str(tmp_path / "tiny.revs"), "--steps", "4", *FLAGS, "--out", str(out)]) == 0
    monkeypatch.setattr(loop, "_allreduce", real)
    capsys.readouterr()
    status = json.loads((out / runs.STATUS).read_text())
    assert status["status"] == "stopped"
    (out / runs.STATUS).write_text(json.dumps({**status, "started": FIRST, "ended": FIRST_END}))
    return out


def test_a_resumed_run_keeps_its_first_start_and_its_duration_leaves_out_the_pause(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``started`` became the resume's time (the run jumped to the end of the oldest-first list), and the
    duration counted from it, so the minute trained before the stop was lost."""
    out = _stopped(tmp_path, monkeypatch, capsys)
    assert cli.main(["train", "--resume", str(out), "--json"]) == 0
    capsys.readouterr()
    status = json.loads((out / runs.STATUS).read_text())
    assert status["status"] == "finished" and status["started"] == FIRST
    assert len(status["resumed"]) == 1 and status["resumed"][0] > FIRST_END and status["trained_s"] == 60.0
    info = runs.read_run(str(out))
    duration = info.duration_s()
    assert duration is not None and 60.0 <= duration < 3600  # (not the year between)
    assert cli.main(["runs", str(out), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["runs"][0]
    assert listed["started"] == FIRST and listed["resumed"] == status["resumed"] and listed["duration_s"] >= 60.0


def test_a_killed_segment_counts_up_to_its_last_status_and_old_files_still_read(tmp_path: Path) -> None:
    run = tmp_path / "old"
    run.mkdir()
    (run / runs.STATUS).write_text(json.dumps({"status": "stopped", "started": FIRST, "ended": FIRST_END}))
    info = runs.read_run(str(run))  # (no resumed, no trained_s: from started to ended, as before)
    assert info.resumed == [] and info.trained_s is None and info.duration_s() == 60.0
    (run / runs.STATUS).write_text(json.dumps({"status": "running", "pid": -1, "started": FIRST, "resumed": [FIRST_END],
                                               "trained_s": 30}))
    stamp = runs.parse_time("2026-01-01T10:02:00+00:00").timestamp()  # type: ignore[union-attr]
    os.utime(run / runs.STATUS, (stamp, stamp))  # killed: its status was last written a minute after the resume
    writer = runs.RunWriter(str(run), resumed=True)
    writer.close()
    assert writer.status["started"] == FIRST and writer.status["trained_s"] == 90.0
    assert writer.status["resumed"][0] == FIRST_END and len(writer.status["resumed"]) == 2
