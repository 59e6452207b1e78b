"""Ring buffers of a run's curves, and the debiased smoothing drawn over them.

A :class:`Series` keeps the newest ``capacity`` points of one curve as numpy
columns (step, epoch, wall time, value, smoothed value) so a plot can hand a
contiguous view to ``setData`` without copying. The smoothed column is the
exponential moving average TensorBoard draws, debiased so the first points
are not pulled towards zero; it is updated per point as rows arrive and
recomputed in one vectorised pass when the smoothing weight changes.
Where a series knows its run's logging interval (``gap``: ``log_every``
steps), the weight is that of one such interval, and a point ``k`` intervals
after the last one weighs the past by ``weight ** k``: smoothing spans the
same steps on every curve, so a validation curve checked every 50 steps is
not smoothed over five times the steps its training curve is (with
TensorBoard's weight per point, at 0.95 it lagged behind by hundreds of
steps). The training curves, one point per interval, smooth exactly as
TensorBoard's.
No Qt here: the buffers are tested headless and fed by the run controller.
"""
from __future__ import annotations

import math

import numpy as np

from revstudio.qt.plots.rows import DEFAULT_CAPACITY

X_AXES = ("step", "epoch", "time")
COLUMNS = {"step": 0, "epoch": 1, "time": 2, "value": 3, "smooth": 4}
INITIAL_ROOM = 1024
BLOCK = 64      # points per min/max block of the drawn overview
DETAIL = 4096   # up to this many points (in view) are drawn one by one
MIN_WEIGHT = 1e-300  # a point long after the last one forgets it all (its log stays finite)


def ema_debiased(values: np.ndarray, weight: float, steps: np.ndarray | None = None,
                 gap: float | None = None) -> np.ndarray:
    """TensorBoard's smoothing: ``s_i = w s_{i-1} + (1-w) y_i``, divided by ``1 - w^(i+1)``.

    Vectorised in blocks: inside a block the recurrence is a cumulative sum of
    ``y_j w^-j``, and the block length is chosen so ``w^-j`` stays far from
    overflowing. NaN points (a diverged step) are skipped, not propagated.
    With ``steps`` and ``gap``, point ``i`` weighs the past by ``w ** (Δstep / gap)``
    (``Δstep`` from the previous finite point): the same smoothing per step on
    a curve logged every ``gap`` steps as on one logged more sparsely.
    """
    return ema_state(values, weight, steps, gap)[0]


def ema_state(values: np.ndarray, weight: float, steps: np.ndarray | None = None,
              gap: float | None = None) -> tuple[np.ndarray, float, float]:
    """:func:`ema_debiased`, and the recurrence's numerator and denominator after the last point."""
    y = np.asarray(values, dtype=np.float64)
    out = np.full_like(y, np.nan)
    if y.size == 0:
        return out, 0.0, 0.0
    finite = np.isfinite(y)
    num = den = 0.0
    if not finite.any():
        return out, 0.0, 0.0
    if weight <= 0.0:
        out[finite] = y[finite]
        num, den = float(y[finite][-1]), 1.0  # (each point is itself)
    else:
        w = min(float(weight), 0.999999)
        weights = None
        if steps is not None and gap:
            x = np.asarray(steps, dtype=np.float64)[finite]
            delta = np.diff(x, prepend=0.0)
            if (delta == delta[0]).all():  # evenly logged (from the run's start): one weight
                w = float(step_weights(x[:1], w, gap)[0])
            else:
                weights = step_weights(x, w, gap)
        if weights is not None:
            out[finite], num, den = _ema_weights(y[finite], weights)
        else:  # (blocks of one weight: a third of the time of a weight per point)
            out[finite] = _ema(y[finite], w)
            den = 1.0 - w ** int(finite.sum())
            num = float(out[finite][-1]) * den
    if not finite.all():  # a NaN point shows the previous smoothed value, like the incremental update
        idx = np.where(finite, np.arange(y.size), -1)
        np.maximum.accumulate(idx, out=idx)
        out = np.where(idx >= 0, out[np.maximum(idx, 0)], np.nan)
    return out, num, den


def step_weights(steps: np.ndarray, weight: float, gap: float) -> np.ndarray:
    """Each point's weight of the past: ``weight ** (steps since the previous point / gap)``, the first
    point's counted from step 0 (a validation point at step 50 stands for 50 steps, as the training
    curve's first five points do)."""
    delta = np.diff(steps, prepend=0.0)  # the first point stands for the steps since the run's start
    with np.errstate(under="ignore"):
        w = weight ** (np.maximum(delta, 0.0) / gap)
    return np.clip(w, MIN_WEIGHT, 0.999999)


def _ema_weights(y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float, float]:
    """The debiased EMA with a weight per point: ``s_i = w_i s_{i-1} + (1-w_i) y_i`` (and ``d_i`` alike).

    As :func:`_ema`, in blocks where the product of the weights since the block's start stays
    above ``e^-300``, so dividing by it cannot overflow."""
    out = np.empty_like(y)
    logs = np.cumsum(np.log(w))  # decreasing
    s = d = 0.0
    start = 0
    while start < y.size:
        base = logs[start - 1] if start else 0.0
        stop = start + max(1, int(np.searchsorted(base - logs[start:], 300.0, side="right")))
        decay = np.exp(logs[start:stop] - base)   # the product of the weights since the block's start
        scale = (1 - w[start:stop]) / decay
        num = np.cumsum(y[start:stop] * scale) * decay + s * decay
        den = np.cumsum(scale) * decay + d * decay
        out[start:stop] = num / den
        s, d = float(num[-1]), float(den[-1])
        start = stop
    return out, s, d


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
    """One curve's newest points, appended one at a time, read as contiguous views.

    For drawing, :meth:`view` hands out at most a few thousand points whatever
    the length: beyond ``DETAIL`` points in view, completed blocks of ``BLOCK``
    points are drawn by their minimum and maximum (pyqtgraph's 'peak' rule),
    computed once per block as it completes, so a frame of a 100,000-point
    curve costs what a 3,000-point one does.
    """

    def __init__(self, name: str, capacity: int = DEFAULT_CAPACITY, weight: float = 0.0,
                 gap: float | None = None) -> None:
        self.name = name
        self.gap = gap if gap and gap > 0 else None  # steps per logged row: the weight is per this many steps
        self._last_step = 0.0  # step of the last finite point (the smoothing's clock; a run starts at 0)
        self._delta, self._w_delta = math.nan, 0.0  # the last gap between points, and its weight
        self.capacity = int(capacity)
        # Room grows by doubling up to twice the capacity: a short run's curve stays small, and
        # overlaid runs do not each hold megabytes of empty buffer.
        self._data = np.full((5, min(INITIAL_ROOM, 2 * self.capacity)), np.nan)
        self._start = 0
        self._end = 0
        self.weight = float(weight)
        self._num = 0.0  # EMA state (numerator and debias denominator)
        self._den = 0.0
        self.version = 0  # bumped on every change: plots redraw only what changed
        self._reset_blocks()

    def _reset_blocks(self) -> None:
        self._bstart = self._start          # buffer index where block 0 begins
        self._nb = 0                        # completed blocks summarised so far
        self._bx = np.empty((3, 64))        # first step / epoch / time of each block
        self._blo = np.empty((2, 64))       # min of value / smooth
        self._bhi = np.empty((2, 64))       # max of value / smooth

    def __len__(self) -> int:
        return self._end - self._start

    def append(self, step: float, epoch: float, time: float, value: float) -> None:
        if self._end == self._data.shape[1]:
            if self._data.shape[1] < 2 * self.capacity:  # grow, keeping the points where they are
                room = np.full((5, min(2 * self._data.shape[1], 2 * self.capacity)), np.nan)
                room[:, :self._end] = self._data[:, :self._end]
                self._data = room
            else:  # full: keep the newest `capacity` points at the front (amortised O(1) per point)
                keep = self.capacity - 1
                self._data[:, :keep] = self._data[:, self._end - keep:self._end]
                self._start, self._end = 0, keep
                self._reset_blocks()
        if self._end - self._start == self.capacity:
            self._start += 1
        i = self._end
        col = self._data[:, i]
        col[0], col[1], col[2], col[3] = step, epoch, time, value
        if math.isfinite(value):
            w = self.weight
            if self.gap is not None and w > 0:
                delta = step - self._last_step
                if delta != self._delta:  # (a curve's points mostly come evenly: one pow per change)
                    self._delta = delta
                    self._w_delta = min(max(w ** (max(delta, 0.0) / self.gap), MIN_WEIGHT), 0.999999)
                w = self._w_delta
            self._num = w * self._num + (1 - w) * value
            self._den = w * self._den + (1 - w)
            self._last_step = step
        col[4] = self._num / self._den if self._den > 0 else math.nan  # NaN: the previous smoothed value
        self._end = i + 1
        self.version += 1

    def trim(self) -> None:
        """Let go of the room grown for points that have not come: a saved run read to its end keeps no
        more than its points (a 200,000-point curve had room for 262,144); a later point grows it again."""
        if self._start == 0 and 0 < self._end < self._data.shape[1]:
            self._data = self._data[:, :self._end].copy()

    def rewind(self, step: float) -> None:
        """Drop the points at ``step`` and after: a resumed run repeats the steps since its last
        checkpoint, and its curve goes on from there rather than running back from the later ones."""
        steps = self.column("step")
        keep = int(np.searchsorted(steps, step, side="left"))
        if keep == steps.size:
            return
        self._end = self._start + keep
        self._data[:, self._end:] = np.nan
        self._restart_smoothing()
        self._reset_blocks()
        self.version += 1

    def _restart_smoothing(self) -> None:
        """The EMA's state continued from the kept points (their smoothed column recomputed)."""
        values = self.column("value")
        steps = self.column("step")
        smooth, self._num, self._den = ema_state(values, self.weight, steps, self.gap)
        if values.size:
            self._data[4, self._start:self._end] = smooth
        finite = np.isfinite(values)
        self._last_step = float(steps[finite][-1]) if finite.any() else 0.0

    def set_weight(self, weight: float) -> None:
        """Change the smoothing and recompute the smoothed column of the kept points."""
        weight = min(max(float(weight), 0.0), 0.999)
        if weight == self.weight:
            return
        self.weight = weight
        self._delta = math.nan  # (its weight was the old one's)
        self._restart_smoothing()  # recomputed, and the state continues the EMA from its tail
        self._reset_blocks()
        self.version += 1

    def column(self, name: str) -> np.ndarray:
        """A view (no copy) of one column of the kept points."""
        return self._data[COLUMNS[name], self._start:self._end]

    def _update_blocks(self) -> None:
        complete = (self._end - self._bstart) // BLOCK
        if complete <= self._nb:
            return
        if complete > self._bx.shape[1]:
            size = max(complete, 2 * self._bx.shape[1])
            for name in ("_bx", "_blo", "_bhi"):
                old = getattr(self, name)
                new = np.empty((old.shape[0], size))
                new[:, :self._nb] = old[:, :self._nb]
                setattr(self, name, new)
        a, b = self._bstart + self._nb * BLOCK, self._bstart + complete * BLOCK
        chunk = self._data[:, a:b].reshape(5, complete - self._nb, BLOCK)
        self._bx[:, self._nb:complete] = chunk[:3, :, 0]
        with np.errstate(invalid="ignore"):
            self._blo[:, self._nb:complete] = np.fmin.reduce(chunk[3:], axis=2)  # fmin/fmax skip NaN points
            self._bhi[:, self._nb:complete] = np.fmax.reduce(chunk[3:], axis=2)
        self._nb = complete

    def view(self, axis: str, which: str = "value", x_range: tuple[float, float] | None = None,
             max_points: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """x and y to draw: the points in ``x_range`` (all when None), at most about ``max_points``.

        Few enough points are handed out one by one (views, no copy). Beyond
        that, groups of points are drawn by their minimum and maximum so about
        ``max_points`` remain (the caller passes two per pixel column of its
        plot: pyqtgraph's 'peak' rule), so a spike is never lost. Long curves
        use the completed blocks' minima and maxima, kept as the points arrive,
        so a frame costs the same at 3,000 points as at 100,000; shorter ones
        (fewer blocks than pixel columns) are grouped on the fly. ``max_points``
        None means ``DETAIL``. The points just outside ``x_range`` come too, so
        the lines leave the frame at its edges.
        """
        xs, ys = self.column(axis), self.column(which)
        n = xs.size
        limit = DETAIL if max_points is None else max(2 * BLOCK, int(max_points))
        i0, i1 = 0, n
        if x_range is not None and n:
            i0 = max(0, int(np.searchsorted(xs, x_range[0])) - 1)
            i1 = min(n, int(np.searchsorted(xs, x_range[1])) + 1)
        if i1 - i0 <= limit:
            return xs[i0:i1], ys[i0:i1]
        if (i1 - i0) // BLOCK < limit // 2:  # a block would span more than a pixel column
            return _peaks(xs[i0:i1], ys[i0:i1], limit)
        self._update_blocks()
        lo_i, hi_i = self._start + i0, self._start + i1  # buffer indices of the points in view
        first = max(0, -(-(self._start - self._bstart) // BLOCK))  # blocks that lost points to the ring: raw
        b0 = max(first, (lo_i - self._bstart) // BLOCK)
        b1 = min(self._nb, -(-(hi_i - self._bstart) // BLOCK))
        if b1 <= b0:
            return xs[i0:i1], ys[i0:i1]
        head = slice(lo_i, max(lo_i, self._bstart + b0 * BLOCK))    # raw points before the first block
        tail = slice(min(hi_i - 1, max(lo_i, self._bstart + b1 * BLOCK)), hi_i)  # the last one's, and after
        room = max(2, limit - (head.stop - head.start) - (tail.stop - tail.start))
        group = max(1, -(-2 * (b1 - b0) // room))  # blocks per drawn pair
        starts = np.arange(0, b1 - b0, group)
        a, w = ("step", "epoch", "time").index(axis), 0 if which == "value" else 1
        bx = np.repeat(self._bx[a, b0:b1][starts], 2)
        with np.errstate(invalid="ignore"):
            lows = np.fmin.reduceat(self._blo[w, b0:b1], starts)
            highs = np.fmax.reduceat(self._bhi[w, b0:b1], starts)
        by = np.column_stack((lows, highs)).ravel()
        row_x, row_y = COLUMNS[axis], COLUMNS[which]
        x = np.concatenate((self._data[row_x, head], bx, self._data[row_x, tail]))
        y = np.concatenate((self._data[row_y, head], by, self._data[row_y, tail]))
        return x, y

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


def _peaks(xs: np.ndarray, ys: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The minimum and maximum of each run of points, about ``limit`` points in all (the rest raw)."""
    group = -(-2 * xs.size // limit)
    whole = xs.size // group * group
    with np.errstate(invalid="ignore"):
        lows = np.fmin.reduce(ys[:whole].reshape(-1, group), axis=1)
        highs = np.fmax.reduce(ys[:whole].reshape(-1, group), axis=1)
    rest = min(whole, xs.size - 1)  # the newest point is drawn where it is, even when the groups end flush
    x = np.concatenate((np.repeat(xs[:whole:group], 2), xs[rest:]))
    y = np.concatenate((np.column_stack((lows, highs)).ravel(), ys[rest:]))
    return x, y
