"""A value axis whose log-scale ticks stay readable for any span.

pyqtgraph labels every 1..9 mantissa inside a short log range (fifteen labels in 90 px
for 5e-8..1e-6, drawn over each other) and no tick at all in a range narrower than
one step. Here ticks are chosen by the room the axis has: decades (every k-th where
they crowd), or 1-2-5 or 1..9 mantissas, or, inside one step of those, round linear
values; neighbouring labels are always at least a line and a half apart.
"""
from __future__ import annotations

import math
from typing import Any

from PySide6.QtGui import QFont, QFontMetricsF

from revstudio.qt.plots.axis_title import TitledAxis

_SUP = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
GAP_LINES = 1.5  # least distance between neighbouring labels, in label heights


def _nice(step: float) -> float:
    """The 1, 2 or 5 times a power of ten at or above ``step``."""
    e = math.floor(math.log10(step))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10.0 ** e >= step * (1 - 1e-9):
            return m * 10.0 ** e
    return 10.0 ** (e + 1)


def _fits(ticks: list[float], px_per_unit: float, gap_px: float, least: int = 2) -> bool:
    return len(ticks) >= least and all((b - a) * px_per_unit >= gap_px for a, b in zip(ticks, ticks[1:]))


def log_ticks(lo: float, hi: float, size_px: float, gap_px: float) -> list[float]:
    """Tick positions (log10 of the values) in [lo, hi] on an axis ``size_px`` long whose labels
    need ``gap_px`` between neighbours."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo or size_px <= 0:
        return []
    per = size_px / (hi - lo)  # pixels per decade
    d0, d1 = math.floor(lo), math.ceil(hi)
    inside = [float(d) for d in range(d0, d1 + 1) if lo - 1e-9 <= d <= hi + 1e-9]
    if len(inside) >= 2 and not _fits(inside, per, gap_px):  # decades crowd: every k-th
        k = math.ceil(gap_px / per)
        return [d for d in inside if int(d) % k == 0] or inside[:1]
    best = inside
    for mantissas in ((1, 2, 5), tuple(range(1, 10))):
        ticks = [d + math.log10(m) for d in range(d0, d1 + 1) for m in mantissas]
        ticks = [t for t in ticks if lo - 1e-9 <= t <= hi + 1e-9]
        if _fits(ticks, per, gap_px) and len(ticks) > len(best):
            best = ticks
    if len(best) >= 2:
        return best
    # Inside one step of the mantissas: round linear values, as few as keep the labels apart.
    vlo, vhi = 10.0 ** lo, 10.0 ** hi
    step = _nice((vhi - vlo) / max(2, int(size_px // gap_px)))
    while True:
        first = math.ceil(vlo / step - 1e-9)
        values = [(first + i) * step for i in range(int((vhi - vlo) / step) + 2)]
        ticks = [math.log10(v) for v in values if vlo * (1 - 1e-12) <= v <= vhi * (1 + 1e-12)]
        if _fits(ticks, per, gap_px, least=1) or len(ticks) <= 1:
            return ticks
        step = _nice(step * 1.01)


def log_label(value: float) -> str:
    """``10⁻⁷``, ``2·10⁻⁷`` or ``2.4·10⁻⁷`` for the log10 tick ``value``."""
    e = math.floor(value + 1e-9)
    m = 10.0 ** (value - e)
    if m >= 9.9995:  # rounding carried into the next decade
        e, m = e + 1, 1.0
    power = "10" + str(e).translate(_SUP)
    if abs(m - 1.0) < 5e-4:
        return power
    return f"{m:.3g}·{power}"


class LogAxis(TitledAxis):
    """An AxisItem whose log-mode ticks are chosen by the room the axis has (see module doc)."""

    def label_gap(self) -> float:
        font = self.style.get("tickFont") or QFont()
        metrics = QFontMetricsF(font)
        if self.orientation in ("left", "right"):
            return GAP_LINES * metrics.height()
        return metrics.horizontalAdvance("8.88·10⁻⁸⁸") + metrics.height()

    def logTickValues(self, minVal: float, maxVal: float, size: float, stdTicks: Any) -> list[Any]:  # noqa: N802,N803
        return [(None, log_ticks(float(minVal), float(maxVal), float(size), self.label_gap()))]

    def logTickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        return [log_label(float(v)) for v in values]
