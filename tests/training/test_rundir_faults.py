"""A run directory that cannot be written: one clear message, no traceback, no half rows.

Both used to end as "internal error: OSError ... (please report this)", printed twice (the
report of the failure tried to write to the same folder and failed again), with exit 1 for an
``--out`` that could never work and status.json left at "running".
"""
from __future__ import annotations

import errno
import json
import os
import sys

import pytest
from training_kit import EXAMPLES

from revstudio import cli
from revstudio.core import tempfiles

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))
QUICK = ["--batch-size", "8", "--lr", "0.01", "--device", "cpu", "--gradcheck-every", "0", "--memory-every", "0",
         "--val-every", "0"]


def test_an_out_folder_that_cannot_be_made_is_a_usage_error(tmp_path, capsys) -> None:
    (tmp_path / "afile").write_text("in the way")
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--out", str(tmp_path / "afile" / "run")]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and err.count("cannot write") == 1
    assert str(tmp_path / "afile") in err and "--out" in err
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--json", "--out", str(tmp_path / "afile")]) == 2
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows == [{**rows[0], "event": "failed", "exit_code": 2}] and "cannot write" in rows[0]["message"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the metrics file through /proc")
def test_a_disk_that_fills_up_during_the_run_ends_it_cleanly_without_half_rows(tmp_path, capsys,
                                                                               monkeypatch) -> None:
    real, rows_written = os.write, [0]

    def filling_disk(fd: int, data: bytes) -> int:
        try:
            name = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            name = ""
        if name.endswith("metrics.jsonl"):
            rows_written[0] += 1
            if rows_written[0] > 3:  # the 4th row: half of it lands, then the disk is full
                real(fd, data[: len(data) // 2])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(os, "write", filling_disk)
    run = tmp_path / "run"
    code = cli.main(["train", EXAMPLE, "--steps", "6", *QUICK, "--log-every", "1", "--json", "--out", str(run)])
    monkeypatch.setattr(os, "write", real)
    captured = capsys.readouterr()
    assert code == 1 and "internal error" not in captured.err + captured.out
    last = json.loads(captured.out.splitlines()[-1])
    assert last["event"] == "failed" and "No space left on device" in last["message"]
    assert "metrics.jsonl" in last["message"] and "--resume" in last["message"]
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line) for line in lines)  # no half row
    # the failed row found no room, but status.json (what `revstudio runs` and the Runs tab read)
    # says how the run ended: it stayed "running", then read as "killed" once the process was gone
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "failed" and "No space left on device" in status["message"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the metrics file through /proc")
def test_a_disk_with_no_room_for_any_new_file_still_gets_the_runs_end_into_its_status(tmp_path, capsys,
                                                                                      monkeypatch) -> None:
    real_write, real_atomic, full = os.write, tempfiles.write_atomic, [False]

    def filling_disk(fd: int, data: bytes) -> int:
        try:
            name = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            name = ""
        if name.endswith("metrics.jsonl") and os.path.exists(tmp_path / "run" / "checkpoints" / "last.pt"):
            full[0] = True  # after the first checkpoint, the disk is full: no row, no new file
        if full[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    def no_new_files(path, data, **kw):
        if full[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_atomic(path, data, **kw)

    monkeypatch.setattr(os, "write", filling_disk)
    monkeypatch.setattr(tempfiles, "write_atomic", no_new_files)
    run = tmp_path / "run"
    code = cli.main(["train", EXAMPLE, "--steps", "6", *QUICK, "--log-every", "1", "--checkpoint-every", "2",
                     "--out", str(run)])
    monkeypatch.setattr(os, "write", real_write)
    monkeypatch.setattr(tempfiles, "write_atomic", real_atomic)
    assert code == 1 and full[0] and "No space left on device" in capsys.readouterr().err
    status = json.loads((run / "status.json").read_text())  # (whole JSON: rewritten in its own space)
    assert status["status"] == "failed" and "No space left on device" in status["message"]
    assert cli.main(["runs", str(tmp_path)]) == 0
    assert "failed" in capsys.readouterr().out


def test_a_checkpoint_that_cannot_be_written_ends_the_run_cleanly(tmp_path, capsys, monkeypatch) -> None:
    real = tempfiles.write_atomic

    def no_room_for_checkpoints(path, data, **kw):
        if str(path).endswith(".pt"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data, **kw)

    monkeypatch.setattr(tempfiles, "write_atomic", no_room_for_checkpoints)
    run = tmp_path / "run"
    assert cli.main(["train", EXAMPLE, "--steps", "3", *QUICK, "--out", str(run)]) == 1
    err = capsys.readouterr().err
    assert "internal error" not in err and err.count("No space left on device") == 1
    assert os.path.join("checkpoints", "best.pt") in err  # (the end's validation writes best.pt before last.pt)
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "failed" and "No space left" in status["message"]


def _no_room_for(monkeypatch, name: str) -> None:
    """A disk that fills up as the start's record writes ``name`` (model.py, config.json)."""
    real = tempfiles.write_atomic

    def full_at(path, data, **kw):
        if os.path.basename(str(path)) == name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data, **kw)

    monkeypatch.setattr(tempfiles, "write_atomic", full_at)


def test_a_disk_full_while_a_new_run_starts_leaves_no_run_behind(tmp_path, capsys, monkeypatch) -> None:
    """It left a folder whose status.json said "running" (listed as killed once the process was gone) and
    an empty metrics.jsonl: a run that never started, as for any other run refused before step 1, goes."""
    _no_room_for(monkeypatch, "model.py")
    run = tmp_path / "runs" / "run"
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--out", str(run)]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and "model.py: No space left on device; free some space" in err
    assert not (tmp_path / "runs").exists()


def test_a_disk_full_while_a_run_resumes_says_it_failed(tmp_path, capsys, monkeypatch) -> None:
    """Its status.json was left "running" by the start that could not write its record."""
    run = tmp_path / "run"
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--out", str(run)]) == 0
    capsys.readouterr()
    _no_room_for(monkeypatch, "config.json")
    assert cli.main(["train", "--resume", str(run), "--steps", "2"]) == 2
    assert "config.json: No space left on device" in capsys.readouterr().err
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "failed" and "No space left on device" in status["message"]
    assert (run / "checkpoints" / "last.pt").exists()  # (its checkpoint stays: a later --resume goes on)


def test_a_new_run_into_a_folder_holding_a_run_is_refused(tmp_path, capsys) -> None:
    """It appended its rows to the other run's metrics.jsonl and replaced its checkpoint."""
    run = tmp_path / "run"
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--out", str(run)]) == 0
    before = {p.name: p.read_bytes() for p in [*run.iterdir(), *(run / "checkpoints").iterdir()] if p.is_file()}
    capsys.readouterr()
    assert cli.main(["train", EXAMPLE, "--steps", "2", *QUICK, "--out", str(run)]) == 2
    err = capsys.readouterr().err
    assert "already holds a run" in err and f"--resume {run}" in err
    after = {p.name: p.read_bytes() for p in [*run.iterdir(), *(run / "checkpoints").iterdir()] if p.is_file()}
    assert after == before


def test_a_failure_during_the_run_reports_its_time_and_step_like_the_rows_before_it(tmp_path, capsys,
                                                                                  monkeypatch) -> None:
    """The failed row said "time": 0.0 even after steps that had taken time, and "step": null
    (status.json too) after two steps."""
    import time

    from revstudio.training import loop, runs

    real, calls = loop._allreduce, [0]

    def failing_at_step_3(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 3:
            time.sleep(0.05)
            raise runs.RunDirError(str(tmp_path / "run" / "metrics.jsonl"), OSError(errno.ENOSPC, "full"))
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "_allreduce", failing_at_step_3)
    code = cli.main(["train", EXAMPLE, "--steps", "6", *QUICK, "--log-every", "1", "--json",
                     "--out", str(tmp_path / "run")])
    assert code == 1
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[-1]["event"] == "failed" and rows[-2]["step"] == 2
    assert rows[-1]["time"] >= rows[-2]["time"] + 0.05
    assert rows[-1]["step"] == 2  # the last step it trained
    saved = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[-1])
    assert saved["time"] == rows[-1]["time"] and saved["step"] == 2
    assert json.loads((tmp_path / "run" / "status.json").read_text())["step"] == 2


def test_a_run_refused_before_it_trained_leaves_its_folder_free_for_the_fixed_run(tmp_path, capsys) -> None:
    """Bad data refuses the run (and its folder goes with it: test_refused_run_folder); the same
    --out, once the data is fixed, was then refused as a folder holding a run."""
    run = tmp_path / "run"
    missing = tmp_path / "nowhere.npz"
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--data", str(missing), "--out", str(run)]) == 2
    assert not run.exists()
    capsys.readouterr()
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--out", str(run), "--json"]) == 0
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[0]["event"] == "started" and not any(r.get("event") == "failed" for r in rows)
    assert json.loads((run / "status.json").read_text())["status"] == "finished"


def test_a_run_folder_error_says_what_to_do_for_its_cause() -> None:
    """A folder without write permission was told to "free some space" as well; a full disk to
    pick another folder. Each is told what fixes it, and an unknown cause both."""
    from revstudio.training.runs import RunDirError

    denied = str(RunDirError("/r/status.json", OSError(errno.EACCES, "Permission denied")))
    full = str(RunDirError("/r/status.json", OSError(errno.ENOSPC, "No space left on device")))
    other = str(RunDirError("/r/status.json", OSError(errno.EIO, "Input/output error")))
    assert "free some space" not in denied and "give --out a folder you can write" in denied
    assert "free some space" in full and "--out" not in full
    assert "free some space" in other and "--out" in other


def test_an_out_that_is_or_runs_through_a_file_is_told_so(tmp_path) -> None:
    # `--out model.revs` (or a path under it) said "Not a directory; free some space or give --out a folder
    # you can write": no space to free and nothing unwritable; the cause is the file in the way
    from revstudio.training.runs import RunDirError

    (tmp_path / "afile").write_text("in the way")
    for path in (tmp_path / "afile" / "checkpoints", tmp_path / "afile" / "run" / "status.json"):
        text = str(RunDirError(str(path), OSError(errno.ENOTDIR, "Not a directory")))
        assert "free some space" not in text
        assert f"{tmp_path / 'afile'} is a file, not a folder; give --out a folder" in text
