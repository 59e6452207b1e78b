"""Smoothing spans the same steps on every curve of a run: a validation curve (every 50 steps) is not
smoothed over five times the steps of its training curve (every 10), as a weight per point did."""
from __future__ import annotations

import math

import numpy as np
import pytest

from revstudio.qt.plots.rows import RunData
from revstudio.qt.plots.series import Series, ema_debiased


def reference(values, steps, w, gap):
    out, num, den, last = [], 0.0, 0.0, 0.0  # (the run starts at step 0)
    for v, x in zip(values, steps):
        if math.isfinite(v):
            wi = min(max(w ** ((x - last) / gap), 1e-300), 0.999999)
            num, den, last = wi * num + (1 - wi) * v, wi * den + (1 - wi), x
        out.append(num / den if den else math.nan)
    return np.array(out)


@pytest.mark.parametrize("weight", [0.3, 0.9, 0.99, 0.999])
def test_the_vectorised_smoothing_weighs_each_point_by_the_steps_since_the_last(weight):
    rng = np.random.default_rng(3)
    steps = np.cumsum(rng.choice([10, 10, 50, 300, 20_000], size=5_000)).astype(float)
    y = rng.normal(size=steps.size)
    y[[0, 17, 4000]] = np.nan
    # (atol: values near 0 after cancelling sums, where the loop's and the blocks' rounding differ)
    np.testing.assert_allclose(ema_debiased(y, weight, steps, 10), reference(y, steps, weight, 10),
                               rtol=1e-9, atol=1e-9)
    even, z = np.arange(1, 2001) * 10.0, rng.normal(size=2000)  # a point every interval: TensorBoard's
    np.testing.assert_allclose(ema_debiased(z, weight, even, 10), ema_debiased(z, weight), rtol=1e-9, atol=1e-9)


def test_appending_points_smooths_as_recomputing_them_does():
    steps = [10 * i for i in range(1, 400)] + [10_000, 10_050, 30_000]
    values = [math.cos(s / 300) + (0.5 if s % 20 else 0.0) for s in steps]
    s = Series("val_loss", capacity=1000, weight=0.9, gap=10)
    for x, v in zip(steps, values):
        s.append(x, x / 100, x / 10, v)
    appended = s.column("smooth").copy()
    np.testing.assert_allclose(appended, reference(values, steps, 0.9, 10), rtol=1e-9)
    s.set_weight(0.5)
    s.set_weight(0.9)  # recomputed in one pass: the same curve
    np.testing.assert_allclose(s.column("smooth"), appended, rtol=1e-9)
    s.append(30_010, 300.1, 3001.0, 2.0)  # and continued from it
    np.testing.assert_allclose(s.column("smooth"), reference(values + [2.0], steps + [30_010], 0.9, 10), rtol=1e-9)


def _run_with_a_drop(weight: float) -> RunData:
    """Loss and validation loss both 1.0 until step 200, then 0.0; rows every 10 steps, val every 50."""
    run = RunData("r", weight=weight)
    run.feed({"kind": "event", "event": "started", "time": 0.0, "total_steps": 400,
              "config": {"log_every": 10, "val_every": 50}})
    for step in range(10, 401, 10):
        value = 1.0 if step <= 200 else 0.0
        run.feed({"kind": "step", "step": step, "epoch": step / 100, "time": step / 10, "loss": value})
        if step % 50 == 0:
            run.feed({"kind": "val", "step": step, "epoch": step / 100, "time": step / 10, "val_loss": value})
    return run


@pytest.mark.parametrize("how", ["while the run streams", "after the slider moved"])
def test_training_and_validation_curves_smooth_over_the_same_steps(how):
    run = _run_with_a_drop(0.95) if how == "while the run streams" else _run_with_a_drop(0.0)
    if how == "after the slider moved":
        run.set_weight(0.95)
    train, val = run.series["loss"], run.series["val_loss"]
    at_300_train = train.point(int(np.searchsorted(train.column("step"), 300)))["smooth"]
    at_300_val = val.point(int(np.searchsorted(val.column("step"), 300)))["smooth"]
    # 100 steps after the drop both keep 0.95^10 of the old level (weighted by its points' share)
    assert at_300_val == pytest.approx(at_300_train, rel=1e-9)
    assert at_300_train == pytest.approx(0.95 ** 10 * (1 - 0.95 ** 20) / (1 - 0.95 ** 30), rel=1e-9)
    assert train.point(len(train) - 1)["smooth"] < 0.45 and val.point(len(val) - 1)["smooth"] < 0.45


def test_a_run_without_its_logging_interval_smooths_per_point_as_before():
    run = RunData("old", weight=0.9)
    run.feed({"kind": "event", "event": "started", "time": 0.0, "total_steps": 100, "config": {}})
    for step in (50, 100):
        run.feed({"kind": "val", "step": step, "epoch": 0.0, "time": 0.0, "val_loss": 1.0 if step == 50 else 0.0})
    assert run.series["val_loss"].point(1)["smooth"] == pytest.approx(0.9 * 0.1 / (1 - 0.81))
