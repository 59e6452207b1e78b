"""A run whose worker could not write its ending (the disk was full) is not shown as "killed" later.

The worker's status.json stayed at "running"; once its process was gone every reader called the
run killed, though the app had seen the real failure ("No space left on device") live.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from revstudio.training import runs


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _running(tmp_path) -> str:
    path = str(tmp_path / "coupling-20261206-215134")
    os.makedirs(path)
    runs.write_json(os.path.join(path, runs.STATUS), {"status": "running", "pid": _dead_pid(), "step": 3,
                                                      "started": "2026-12-06T21:51:34", "ended": None,
                                                      "metrics": {"loss": 0.5}, "message": None})
    return path


def test_the_ending_seen_live_is_recorded_where_the_worker_could_not(tmp_path) -> None:
    path = _running(tmp_path)
    assert runs.read_run(path).status == "killed"
    why = "cannot write metrics.jsonl: No space left on device; free some space"
    assert runs.record_end(path, "failed", why)
    info = runs.read_run(path)
    assert (info.status, info.message, info.step) == ("failed", why, 3) and info.ended
    assert not runs.record_end(path, "stopped", "again")  # an ending is written once, never over another


def test_a_live_or_finished_run_is_left_alone(tmp_path) -> None:
    path = _running(tmp_path)
    status = os.path.join(path, runs.STATUS)
    with open(status, encoding="utf-8") as handle:
        alive = {**json.load(handle), "pid": os.getpid()}
    runs.write_json(status, alive)
    assert not runs.record_end(path, "failed", "no")
    assert runs.read_run(path).status == "running"


def test_a_killed_run_nobody_saw_end_says_it_may_have_been_the_disk(tmp_path) -> None:
    info = runs.read_run(_running(tmp_path))
    assert info.status == "killed" and "without writing its status" in info.message
    assert "full disk" in info.message


def test_a_pid_beyond_any_process_number_reads_as_gone_not_a_crash(tmp_path) -> None:
    """status.json edited (or written by another program) with a pid of 2**70: `revstudio runs` was an internal
    OverflowError from os.kill; no process has that number, so the run reads as killed like any gone one."""
    path = _running(tmp_path)
    status = os.path.join(path, runs.STATUS)
    with open(status, encoding="utf-8") as handle:
        runs.write_json(status, {**json.load(handle), "pid": 2 ** 70})
    info = runs.read_run(path)
    assert info.status == "killed" and f"its process ({2 ** 70}) is gone" in info.message
