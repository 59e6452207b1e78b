"""A run's loss rows are kept between comparisons: a growing metrics.jsonl is read only where it grew,
a replaced or shrunk one whole again, and the rows are the same as a fresh read's."""
from __future__ import annotations

import json
import os

import pytest

from revstudio.training import loss_rows
from revstudio.training.run_compare import loss_rows as run_loss_rows


def _line(step: int, loss: object) -> str:
    return json.dumps({"kind": "step", "step": step, "epoch": 0, "time": 0.1, "loss": loss}) + "\n"


@pytest.fixture(autouse=True)
def _fresh():
    loss_rows.forget()
    loss_rows.reads.clear()
    yield
    loss_rows.forget()


def _reads(path, how: str) -> int:
    return loss_rows.reads[how, os.path.abspath(path)]


def _fresh_read(run) -> list | None:
    loss_rows.forget()
    return run_loss_rows(run)


def test_a_growing_run_is_read_only_where_it_grew(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(_line(s, 1.0 / s) for s in range(1, 101)))
    assert run_loss_rows(tmp_path) == [(s, 1.0 / s) for s in range(1, 101)]
    size = metrics.stat().st_size
    with metrics.open("a") as handle:  # the worker appends rows (and a line it is still writing)
        handle.write(_line(101, 0.5) + _line(50, 7) + _line(102, None) + '{"kind": "step", "step": 103, "lo')
    rows = run_loss_rows(tmp_path)
    assert (_reads(metrics, "whole"), _reads(metrics, "grown")) == (1, 1)
    assert rows[-3:] == [(100, 0.01), (101, 0.5), (102, None)] and dict(rows)[50] == 7  # (the last row of a step)
    with metrics.open("a") as handle:  # the cut line completed: read from where the last whole line ended
        handle.write('ss": 0.25}\n')
    rows = run_loss_rows(tmp_path)
    assert rows[-1] == (103, 0.25) and _reads(metrics, "grown") == 2 and _reads(metrics, "whole") == 1
    assert run_loss_rows(tmp_path) == rows and _reads(metrics, "grown") == 2  # (unchanged: not read at all)
    assert _fresh_read(tmp_path) == rows and metrics.stat().st_size > size


def test_a_replaced_or_shrunk_file_is_read_whole_again(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(_line(s, 2.0) for s in range(1, 51)))
    assert len(run_loss_rows(tmp_path)) == 50
    other = tmp_path / "new.jsonl"  # replaced atomically (a rerun into the same folder): a new file
    other.write_text("".join(_line(s, 3.0) for s in range(1, 81)))
    os.replace(other, metrics)
    assert run_loss_rows(tmp_path) == [(s, 3.0) for s in range(1, 81)]
    assert _reads(metrics, "whole") == 2
    metrics.write_text(_line(1, 4.0))  # cut short in place: smaller than what was read
    assert run_loss_rows(tmp_path) == [(1, 4.0)] and _reads(metrics, "whole") == 3
    # rewritten in place and then grown past where it was read: its earlier bytes changed, so whole again
    metrics.write_text(_line(1, 5.0) + _line(2, 5.0))
    assert run_loss_rows(tmp_path) == [(1, 5.0), (2, 5.0)] and _reads(metrics, "whole") == 4
    assert _reads(metrics, "grown") == 0


def test_kept_rows_are_compact_and_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(loss_rows, "KEPT", 3)
    runs = []
    for i in range(5):
        run = tmp_path / f"run{i}"
        run.mkdir()
        (run / "metrics.jsonl").write_text("".join(_line(s, s * 0.5) for s in range(1, 1001)))
        runs.append(run)
        run_loss_rows(run)
    kept = loss_rows._kept
    assert list(kept) == [os.path.abspath(r / "metrics.jsonl") for r in runs[2:]]  # the least recent dropped
    rows = next(iter(kept.values()))
    assert rows.steps.itemsize == 8 and rows.losses.itemsize == 8 and not rows.odd  # two flat columns
    run_loss_rows(runs[2])  # read again: now the most recent
    assert list(kept)[-1] == os.path.abspath(runs[2] / "metrics.jsonl")
    assert _reads(runs[2] / "metrics.jsonl", "whole") == 1
    monkeypatch.setattr(loss_rows, "KEPT_BYTES", 2 * 1000 * 16)  # room for two runs' columns
    run_loss_rows(runs[0])
    assert list(kept) == [os.path.abspath(r / "metrics.jsonl") for r in (runs[2], runs[0])]
