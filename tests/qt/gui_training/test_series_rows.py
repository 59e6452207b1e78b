"""Ring buffers, debiased smoothing and the parsing of ``revstudio train --json`` rows, headless."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from revstudio.qt.plots.rows import GRAD_PREFIX, INV_PREFIX, LineSplitter, RunData, human_duration, parse_row
from revstudio.qt.plots.series import Series, ema_debiased
from revstudio.qt.runs.run_dirs import delete_run_dir, list_run_dirs, read_run_dir


def reference_ema(values, w):
    out, num, den = [], 0.0, 0.0
    for v in values:
        if math.isfinite(v):
            num, den = w * num + (1 - w) * v, w * den + (1 - w)
        out.append(num / den if den else math.nan)
    return np.array(out)


@pytest.mark.parametrize("weight", [0.0, 0.3, 0.9, 0.99, 0.999])
def test_vectorised_smoothing_is_tensorboards_debiased_ema(weight):
    rng = np.random.default_rng(1)
    y = rng.normal(size=12_345)
    y[[0, 40, 9000]] = np.nan  # a diverged step neither poisons nor resets the curve
    np.testing.assert_allclose(ema_debiased(y, weight), reference_ema(y, weight), rtol=1e-9, atol=1e-12)
    assert ema_debiased(np.array([5.0]), weight)[0] == pytest.approx(5.0)  # debiased: the first point is itself


def test_series_keeps_the_newest_points_and_smooths_incrementally():
    s = Series("loss", capacity=1000, weight=0.8)
    values = [math.sin(i / 7) for i in range(2600)]
    for i, v in enumerate(values):
        s.append(i, i / 100, i * 0.01, v)
    assert len(s) == 1000
    assert s.column("step")[0] == 1600 and s.column("step")[-1] == 2599
    assert s.column("step").base is not None  # a view, no copy per frame
    np.testing.assert_allclose(s.column("smooth"), reference_ema(values, 0.8)[-1000:], rtol=1e-9)
    s.set_weight(0.5)  # recomputed over the kept points, then continued by new points
    s.append(2600, 26.0, 26.0, 1.0)
    expected = reference_ema(values[-1000:] + [1.0], 0.5)[-1000:]  # the oldest point dropped out
    np.testing.assert_allclose(s.column("smooth"), expected, rtol=1e-9)
    assert s.nearest("step", 2000.4) == 2000 - 1601 and s.point(0)["value"] == pytest.approx(values[1601])


def test_a_long_curve_is_drawn_from_min_max_blocks_and_in_full_when_zoomed():
    from revstudio.qt.plots.series import BLOCK, DETAIL

    s = Series("loss", capacity=50_000)
    rng = np.random.default_rng(2)
    values = rng.normal(size=100_000)
    values[777] = np.nan
    for i, v in enumerate(values):
        s.append(i, i / 10, i * 0.5, v)
    kept = values[50_000:]
    for most in (None, 900, 200):  # None: DETAIL points; 900 / 200: two per pixel column of a plot
        x, y = s.view("step", max_points=most)
        assert len(x) <= (most or DETAIL) + 2 * BLOCK  # an overview, not every point
        assert np.nanmax(y) == kept.max() and np.nanmin(y) == kept.min()  # no peak is lost
        assert x[0] == 50_000 and x[-1] == 99_999 and (np.diff(x) >= 0).all()
    # zoomed on 20,000 points: only those (and one block either side), their peaks kept
    zx, zy = s.view("time", "value", (30_000.0, 40_000.0), max_points=600)
    inside = values[60_000:80_001]
    assert len(zx) <= 600 + 2 * BLOCK and 30_000 - BLOCK * 0.5 <= zx[0] <= 30_000 and zx[-1] >= 39_999.5
    assert zx[-1] <= 40_000 + BLOCK * 0.5 and np.nanmax(zy) >= inside.max() and np.nanmin(zy) <= inside.min()
    # fewer blocks than pixel columns: grouped on the fly, a pair per column, not 64-point blocks
    mid = Series("mid")
    for i in range(3000):
        mid.append(i, 0, 0, math.sin(i / 40))
    mx, my = mid.view("step", max_points=1000)
    assert 900 <= len(mx) <= 1002 and np.max(np.diff(mx)) <= 7
    zx, zy = s.view("time", "value", (30_000.0, 30_100.0))  # zoomed in: every point in view
    assert len(zx) <= DETAIL and zx[1] == 30_000.0 and np.array_equal(zy[1:], values[60_000:60_201])
    short = Series("acc")
    short.append(1, 0, 0, 0.5)
    assert short.view("step")[1].tolist() == [0.5]


def test_line_splitter_waits_for_whole_lines():
    split = LineSplitter()
    row = json.dumps({"kind": "step", "step": 1, "time": 0.1, "loss": 2.0}).encode()
    assert split.feed(row[:10]) == []
    assert split.feed(row[10:] + b"\n" + row[:5]) == [row]
    assert split.flush() == [row[:5]]
    assert parse_row(b"Warning: not a row") is None and parse_row(b"{broken") is None
    assert parse_row(b'{"no": "kind"}') is None


def rows(total=40, regions=("r0", "r1")):
    yield {"kind": "event", "event": "started", "time": 0.0, "run_dir": "x", "config": {"precision": "fp32"},
           "device": "cpu", "total_steps": total, "mode": "reversible", "task": "classification",
           "estimate_bytes": 290, "standard_estimate_bytes": 1000, "regions": list(regions)}
    for step in range(1, total + 1):
        yield {"kind": "step", "step": step, "epoch": step / 10, "time": step * 0.5, "loss": 1 / step, "lr": 1e-3,
               "samples_per_s": 64.0, "accuracy": 0.5, **({"peak_bytes": 280 + step % 3, "estimate_bytes": 290}
                                                           if step % 5 == 0 else {})}
        if step % 10 == 0:
            yield {"kind": "val", "step": step, "epoch": step / 10, "time": step * 0.5, "val_loss": 0.9,
                   "val_accuracy": 0.7}
            yield {"kind": "gradcheck", "step": step, "epoch": step / 10, "time": step * 0.5,
                   "regions": [{"region": r, "grad_rel_error": 1e-7, "inversion_error": 1e-8} for r in regions],
                   "max_grad_rel_error": 1e-7, "max_inversion_error": 1e-8}
            yield {"kind": "event", "event": "checkpoint", "step": step, "time": step * 0.5,
                   "path": "checkpoints/last.pt"}


def test_run_data_files_every_row_kind():
    run = RunData("r")
    lines = [json.dumps(r).encode() for r in rows(total=40)]
    lines.insert(3, b"some library printed this")
    run.feed_lines(lines[:30])
    assert run.status == "running" and run.total_steps == 40
    assert run.eta_seconds() == pytest.approx((40 - run.step) * 0.5)
    run.feed_lines(lines[30:])
    run.feed({"kind": "event", "event": "finished", "step": 40, "time": 20.0, "metrics": {"val_loss": 0.8},
              "wall_s": 20.0})
    assert run.status == "finished" and run.ended and run.fraction() == 1.0
    assert len(run.series["loss"]) == 40 and len(run.series["val_loss"]) == 4
    assert len(run.series["peak_bytes"]) == 8  # only where measured
    assert run.regions() == ["r0", "r1"]
    assert len(run.series[GRAD_PREFIX + "r1"]) == 4 and len(run.series[INV_PREFIX + "r0"]) == 4
    assert run.peak_fraction_of_standard() == pytest.approx(282 / 1000)
    assert run.metrics["val_loss"] == 0.8 and run.checkpoint == "checkpoints/last.pt"
    assert run.noise == ["some library printed this"]


def test_failed_nan_and_stopped_rows_set_the_status():
    run = RunData()
    run.feed({"kind": "event", "event": "nan", "step": 37, "time": 1.0, "node": "c", "message": "loss is NaN at c"})
    assert run.message == "loss is NaN at c" and run.events[-1]["event"] == "nan"
    run.feed({"kind": "event", "event": "failed", "step": 37, "time": 1.1, "message": "diverged", "exit_code": 1})
    assert run.status == "failed" and run.message == "diverged"
    stopped = RunData()
    stopped.feed({"kind": "event", "event": "stopped", "step": 57, "time": 3.0, "checkpoint": "checkpoints/last.pt"})
    assert stopped.status == "stopped" and stopped.step == 57
    assert human_duration(75) == "1 min 15 s" and human_duration(None) == "–"


def _write_run(root, name, status, pid=None, **extra):
    d = root / name
    (d / "checkpoints").mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"lr": 0.01, "mode": "reversible"}))
    (d / "status.json").write_text(json.dumps({"status": status, "pid": pid or os.getpid(), "step": 5,
                                               "total_steps": 10, "started": "2026-12-01T22:00:00",
                                               "ended": "2026-12-01T22:01:30" if status != "running" else None,
                                               "metrics": {"loss": 0.5}, "message": None, **extra}))
    return d


def test_run_directories_are_listed_and_a_dead_running_pid_is_killed(tmp_path):
    _write_run(tmp_path, "a-finished", "finished")
    _write_run(tmp_path, "b-running", "running")  # this test process: alive
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _write_run(tmp_path, "c-killed", "running", pid=dead.pid)
    (tmp_path / "not-a-run").mkdir()
    entries = {e.name: e for e in list_run_dirs(tmp_path)}
    assert set(entries) == {"a-finished", "b-running", "c-killed"}
    assert entries["a-finished"].status == "finished" and entries["a-finished"].duration_s() == 90
    assert entries["b-running"].status == "running"
    assert entries["c-killed"].status == "killed" and "is gone" in entries["c-killed"].message  # (as `revstudio runs`)
    assert read_run_dir(tmp_path / "a-finished").config["lr"] == 0.01
    delete_run_dir(tmp_path / "a-finished", tmp_path)
    assert not (tmp_path / "a-finished").exists()
    with pytest.raises(ValueError, match="not a run folder"):
        delete_run_dir(tmp_path / "not-a-run", tmp_path)
    with pytest.raises(ValueError):
        delete_run_dir(tmp_path, tmp_path.parent)


def test_line_pump_files_a_few_milliseconds_per_call_and_everything_at_the_end():
    from revstudio.qt.plots.rows import LinePump

    run = RunData("pump")
    rows = [json.dumps({"kind": "step", "step": s, "time": s * 0.1, "loss": 1.0 / s}).encode() for s in range(1, 20001)]
    pump = LinePump(run, budget_ms=2.0)
    pump.push(rows)
    filed = pump.pump()
    assert 0 < filed < 20_000 and len(pump) == 20_000 - filed  # the rest waits for the next turn
    assert run.step == filed and len(run.series["loss"]) == filed  # in order, none skipped
    pump.push([b"not a row", json.dumps({"kind": "event", "event": "finished", "step": 20_000}).encode()])
    pump.pump(everything=True)
    assert not len(pump) and run.status == "finished" and len(run.series["loss"]) == 20_000
    assert run.noise == ["not a row"]


def test_a_run_resumed_from_an_earlier_checkpoint_redraws_from_there_not_back_and_forth():
    """A worker killed at step 300 whose last checkpoint was at 250 repeats steps 260-300 when resumed:
    metrics.jsonl then holds them twice, and the curve must not run back from 300 to 260."""
    run = RunData("r")
    run.feed({"kind": "event", "event": "started", "time": 0.0, "resumed_from": None})
    for step in range(10, 310, 10):
        run.feed({"kind": "step", "step": step, "loss": 1.0, "time": step / 10})
    run.feed({"kind": "val", "step": 300, "val_loss": 1.5, "time": 30.0})
    run.feed({"kind": "event", "event": "started", "time": 0.0, "resumed_from": "r"})
    for step in range(260, 410, 10):
        run.feed({"kind": "step", "step": step, "loss": 0.5, "time": (step - 250) / 10})
    run.feed({"kind": "val", "step": 300, "val_loss": 0.7, "time": 5.0})
    steps = run.series["loss"].column("step")
    assert list(steps) == list(range(10, 410, 10))  # each step once, in order
    assert run.series["loss"].column("value")[-15:].tolist() == [0.5] * 15  # the resumed attempt's values
    assert run.series["val_loss"].column("value").tolist() == [0.7]
    times = run.series["loss"].column("time")
    assert (np.diff(times) > 0).all()  # the wall-time axis still runs forward
