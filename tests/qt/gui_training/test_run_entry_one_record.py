"""The Runs tab's record of a run is ``revstudio runs``'s: every field the listing reads reaches the tab."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from revstudio.qt.runs import run_dirs
from revstudio.training.runs import CHECKPOINT, SNAPSHOT, RunInfo, read_run


def _run(root: Path, name: str, **status: object) -> Path:
    folder = root / name
    (folder / "checkpoints").mkdir(parents=True)
    (folder / SNAPSHOT).write_text("{}")
    (folder / "config.json").write_text(json.dumps({"lr": 0.02, "seed": 3}))
    (folder / "label.json").write_text(json.dumps({"label": "wide net"}))
    (folder / "status.json").write_text(json.dumps({
        "status": "finished", "pid": os.getpid(), "step": 40, "total_steps": 40, "started": "2026-12-01T22:00:00",
        "resumed": ["2026-12-01T22:05:00"], "trained_s": 12.5, "ended": "2026-12-01T22:06:00",
        "metrics": {"loss": 0.25}, "message": "done", **status}))
    return folder


def test_every_field_of_the_listing_reads_the_same_in_the_runs_tab(tmp_path: Path) -> None:
    folder = _run(tmp_path, "m-20261201-220000")
    info, entry = read_run(str(folder)), run_dirs.read_run_dir(folder)
    assert entry.info == info
    for f in dataclasses.fields(RunInfo):
        if f.name not in ("path", "step"):
            assert getattr(entry, f.name) == getattr(info, f.name), f.name
    assert entry.path == folder and entry.step == info.step == 40 and entry.name == info.name
    assert entry.title == "wide net" and entry.duration_s() == info.duration_s() == 72.5
    assert (entry.snapshot, entry.checkpoint) == (folder / SNAPSHOT, folder / CHECKPOINT)


def test_a_run_before_its_first_step_counts_from_zero_in_the_tab(tmp_path: Path) -> None:
    folder = _run(tmp_path, "m-20261201-230000", status="running", step=None, ended=None)
    assert read_run(str(folder)).step is None and run_dirs.read_run_dir(folder).step == 0


def test_a_field_added_to_the_listing_reaches_the_runs_tab(tmp_path: Path, monkeypatch) -> None:
    @dataclasses.dataclass
    class Wider(RunInfo):
        evaluations: int = 0  # a field `revstudio runs` might list tomorrow

    folder = _run(tmp_path, "m-20261202-090000")
    monkeypatch.setattr(run_dirs, "read_run", lambda path: Wider(**vars(read_run(path)), evaluations=2))
    entry = run_dirs.read_run_dir(folder)
    assert entry.evaluations == 2 and entry.status == "finished" and entry.path == folder
    assert [e.evaluations for e in run_dirs.list_run_dirs(tmp_path)] == [2]
