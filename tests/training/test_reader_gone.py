"""``revstudio train ... | head``: the reader of the rows goes away mid-run.

The run stops as a signal stops it (a checkpoint, a ``stopped`` row in metrics.jsonl, status
``stopped``, resumable) and exits 141 without a traceback, instead of dying mid-step with its
status still ``running`` and nothing to resume from.
"""
from __future__ import annotations

import io
import json
import os
import sys

import pytest
from pipe_reader import read_then_leave
from training_kit import EXAMPLES, ROOT

from revstudio import cli
from revstudio.training import runs
from revstudio.training.runs import READER_GONE

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))


class ClosedAfter(io.StringIO):
    """A stdout whose reader leaves after ``lines`` lines, as ``head -n LINES`` does."""

    def __init__(self, lines: int) -> None:
        super().__init__()
        self.left = lines

    def write(self, text: str) -> int:
        if self.left <= 0:
            raise BrokenPipeError(32, "Broken pipe")
        self.left -= text.count("\n")
        return super().write(text)


@pytest.mark.parametrize(("flags", "lines"), [(["--json"], 2), ([], 6)], ids=["json", "text"])
def test_a_reader_that_goes_away_stops_the_run_resumably(flags, lines, tmp_path, monkeypatch, capsys) -> None:
    out = tmp_path / "run"
    stdout = ClosedAfter(lines)
    monkeypatch.setattr("sys.stdout", stdout)
    code = cli.main(["train", EXAMPLE, "--steps", "50", "--log-every", "1", "--batch-size", "4",
                     "--device", "cpu", "--out", str(out), *flags])
    err = capsys.readouterr().err
    assert code == cli.PIPE_CLOSED
    assert "Traceback" not in err and "internal error" not in err and "BrokenPipe" not in err
    info = runs.read_run(str(out))
    assert info.status == "stopped" and info.has_checkpoint and 1 <= (info.step or 0) < 50
    assert "reader" in (info.message or "")
    last = runs.read_metrics(str(out))[-1]
    assert last["event"] == "stopped" and last["checkpoint"] == "checkpoints/last.pt"
    assert len(stdout.getvalue().splitlines()) == lines  # nothing more was written once the reader left
    status = json.loads((out / "status.json").read_text())
    assert status["status"] == "stopped"


def test_a_reader_that_goes_away_stops_a_distributed_run_with_141(tmp_path) -> None:
    """Under --nproc, rank 0 stopped the run but exited 141, so torch's launcher logged it as a
    failed worker, and the launcher's own exit was 0 as for a stop by a signal."""
    out = tmp_path / "run"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    code, _, err = read_then_leave(
        [sys.executable, "-P", "-m", "revstudio", "train", EXAMPLE, "--nproc", "2", "--steps", "100000",
         "--log-every", "1", "--batch-size", "4", "--device", "cpu", "--out", str(out), "--json"],
        2, tmp_path, env)
    assert code == cli.PIPE_CLOSED, err
    assert "exitcode" not in err and "Traceback" not in err
    info = runs.read_run(str(out))
    assert info.status == "stopped" and info.has_checkpoint and info.message == READER_GONE
