"""Ring buffers of a run's curves, and the debiased smoothing drawn over them.

A :class:`Series` keeps the newest ``capacity`` points of one curve as numpy
columns (step, epoch, wall time, value, smoothed value) so a plot can hand a
contiguous view to ``setData`` without copying. The smoothed column is the
exponential moving average TensorBoard draws, debiased so the first points
are not pulled towards zero; it is updated per point as rows arrive and
recomputed in one vectorised pass when the smoothing weight changes.
No Qt here: the buffers are tested headless and fed by the run controller.
"""
from __future__ import annotations

import math

import numpy as np

from revstudio.qt.plots.rows import DEFAULT_CAPACITY

X_AXES = ("step", "epoch", "time")
COLUMNS = {"step": 0, "epoch": 1, "time": 2, "value": 3, "smooth": 4}


def ema_debiased(values: np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard's smoothing: ``s_i = w s_{i-1} + (1-w) y_i``, divided by ``1 - w^(i+1)``.

    Vectorised in blocks: inside a block the recurrence is a cumulative sum of
    ``y_j w^-j``, and the block length is chosen so ``w^-j`` stays far from
    overflowing. NaN points (a diverged step) are skipped, not propagated.
    """
    y = np.asarray(values, dtype=np.float64)
    out = np.full_like(y, np.nan)
    if y.size == 0:
        return out
    finite = np.isfinite(y)
    if weight <= 0.0:
        out[finite] = y[finite]
    else:
        out[finite] = _ema(y[finite], min(float(weight), 0.999999))
    if not finite.all():  # a NaN point shows the previous smoothed value, like the incremental update
        idx = np.where(finite, np.arange(y.size), -1)
        np.maximum.accumulate(idx, out=idx)
        out = np.where(idx >= 0, out[np.maximum(idx, 0)], np.nan)
    return out


def _ema(y: np.ndarray, w: float) -> np.ndarray:
    out = np.empty_like(y)
    block = max(1, min(4096, int(200.0 / -math.log10(w))))
    s = 0.0
    d = 0.0
    for start in range(0, y.size, block):
        stop = min(start + block, y.size)
        k = np.arange(1, stop - start + 1, dtype=np.float64)
        decay = w ** (k - 1)
        scale = (1 - w) / decay           # w^-(j-1): each new point in the block's frame
        num = np.cumsum(y[start:stop] * scale) * decay + s * w * decay
        den = np.cumsum(scale) * decay + d * w * decay
        out[start:stop] = num / den
        s, d = float(num[-1]), float(den[-1])
    return out


class Series:
    """One curve's newest points, appended one at a time, read as contiguous views."""

    def __init__(self, name: str, capacity: int = DEFAULT_CAPACITY, weight: float = 0.0) -> None:
        self.name = name
        self.capacity = int(capacity)
        self._data = np.full((5, 2 * self.capacity), np.nan)
        self._start = 0
        self._end = 0
        self.weight = float(weight)
        self._num = 0.0  # EMA state (numerator and debias denominator)
        self._den = 0.0
        self.version = 0  # bumped on every change: plots redraw only what changed

    def __len__(self) -> int:
        return self._end - self._start

    def append(self, step: float, epoch: float, time: float, value: float) -> None:
        if self._end == self._data.shape[1]:  # out of room: keep the newest `capacity` points at the front
            keep = self.capacity - 1
            self._data[:, :keep] = self._data[:, self._end - keep:self._end]
            self._start, self._end = 0, keep
        elif self._end - self._start == self.capacity:
            self._start += 1
        i = self._end
        col = self._data[:, i]
        col[0], col[1], col[2], col[3] = step, epoch, time, value
        if math.isfinite(value):
            w = self.weight
            self._num = w * self._num + (1 - w) * value
            self._den = w * self._den + (1 - w)
        col[4] = self._num / self._den if self._den > 0 else math.nan  # NaN: the previous smoothed value
        self._end = i + 1
        self.version += 1

    def set_weight(self, weight: float) -> None:
        """Change the smoothing and recompute the smoothed column of the kept points."""
        weight = min(max(float(weight), 0.0), 0.999)
        if weight == self.weight:
            return
        self.weight = weight
        values = self.column("value")
        if values.size:
            smooth = ema_debiased(values, weight)
            self._data[4, self._start:self._end] = smooth
            # the state continues the EMA from the recomputed tail
            finite = np.isfinite(values)
            self._den = 1.0 - weight ** int(finite.sum()) if weight > 0 else (1.0 if finite.any() else 0.0)
            self._num = float(smooth[-1]) * self._den if np.isfinite(smooth[-1]) else 0.0
        self.version += 1

    def column(self, name: str) -> np.ndarray:
        """A view (no copy) of one column of the kept points."""
        return self._data[COLUMNS[name], self._start:self._end]

    def last(self, name: str = "value") -> float | None:
        return float(self._data[COLUMNS[name], self._end - 1]) if len(self) else None

    def nearest(self, axis: str, x: float) -> int | None:
        """Index of the kept point whose ``axis`` coordinate is nearest ``x`` (for the hover read-out)."""
        xs = self.column(axis)
        if not xs.size:
            return None
        i = int(np.searchsorted(xs, x))  # x columns only grow, so they are sorted
        if i >= xs.size:
            return xs.size - 1
        if i > 0 and abs(xs[i - 1] - x) <= abs(xs[i] - x):
            return i - 1
        return i

    def point(self, index: int) -> dict[str, float]:
        return {name: float(self._data[c, self._start + index]) for name, c in COLUMNS.items()}
