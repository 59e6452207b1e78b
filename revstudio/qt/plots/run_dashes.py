"""Line styles of overlaid runs beyond the third: a second cue besides colour.

The palette keeps any three runs shown together apart for a red-green colour-blind reader
(colour_vision), not four or more: the fourth run's colour is only the one least like the others.
So from the fourth run on, a run's curves also have a line style of their own (as matplotlib's
and Excel's default cyclers add markers and dashes once colours run out): its training curve
dotted or dashed, its validation curve a dash-dot of its own, never the first three runs' plain
dash. Patterns are Qt's, in pen widths (dash, gap, dash, gap, ...); None is a solid line.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPen

SOLID_RUNS = 3  # the runs whose colours alone stay apart (tests/qt/gui_training/test_run_colours_colour_blind.py)
_PLAIN_DASH = [4.0, 2.0]  # Qt.DashLine's pattern: the first three runs' validation curves
# (training curve, validation curve) of the fourth, fifth, sixth run, then round again
_RUN_DASHES: tuple[tuple[list[float], list[float]], ...] = (
    ([1.0, 2.0], [6.0, 2.0, 1.0, 2.0]),                  # dotted; dash-dot
    ([8.0, 3.0], [8.0, 2.0, 1.0, 2.0, 1.0, 2.0]),        # long dashes; long dash-dot-dot
    ([2.5, 1.5, 1.0, 1.5], [10.0, 2.0, 2.0, 2.0]),       # short dash-dot; long-short dashes
)


def dash_pattern(run_index: int, dashed: bool) -> list[float] | None:
    """The dash pattern of the curve of the ``run_index``-th run shown (from 0) in a plot of
    overlaid runs; ``dashed``: its validation (or inversion) curve. None: a solid line."""
    if run_index < SOLID_RUNS:
        return list(_PLAIN_DASH) if dashed else None
    train, validation = _RUN_DASHES[(run_index - SOLID_RUNS) % len(_RUN_DASHES)]
    return list(validation if dashed else train)


def styled(pen: QPen, pattern: list[float] | None) -> QPen:
    """``pen`` drawn in ``pattern`` (solid for None); flat caps, so a dot stays a dot."""
    if pattern is None:
        pen.setStyle(Qt.PenStyle.SolidLine)
    else:
        pen.setDashPattern(pattern)
        pen.setCapStyle(Qt.PenCapStyle.FlatCap)
    return pen
