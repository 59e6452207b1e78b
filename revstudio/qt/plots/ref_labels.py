"""Labels of horizontal reference lines placed where no curve runs through them.

A reference line's label ("est. reversible 640 KiB") sits just above its line, or
just below it where a curve would strike through it above (a run measuring a
little over its estimate), whichever covers fewer of the curves' points and of
the other lines, and stays inside the plot.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg

ABOVE = (0.0, 1.0)  # the text's bottom-left corner on the line
BELOW = (0.0, 0.0)  # its top-left corner


def _points(curves: Sequence[pg.PlotCurveItem]) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for curve in curves:
        x, y = curve.getData()
        if x is not None and y is not None and len(x):
            xs.append(np.asarray(x, dtype=float))
            ys.append(np.asarray(y, dtype=float))
    if not xs:
        return np.empty(0), np.empty(0)
    return np.concatenate(xs), np.concatenate(ys)


def place_ref_labels(view_box: pg.ViewBox, lines: Sequence[pg.InfiniteLine],
                     curves: Sequence[pg.PlotCurveItem]) -> None:
    """Anchor each visible line's label above or below it (see the module docstring)."""
    shown = [line for line in lines if line.isVisible()]
    if not shown or view_box.width() <= 0 or view_box.height() <= 0:
        return
    view_box.childTransform()  # (brings a range just set into the mapping; pyqtgraph updates it lazily)
    xs, ys = _points(curves)
    y0, y1 = view_box.viewRange()[1]
    for line in shown:
        label = line.label
        others = [float(o.value()) for o in shown if o is not line]
        best: tuple[float, tuple[float, float]] | None = None
        for anchor in (ABOVE, BELOW):
            label.anchors = [anchor, anchor]
            label.updatePosition()
            box = view_box.mapSceneToView(label.sceneBoundingRect()).boundingRect()
            # (the text item's margin is empty: a curve may pass through it)
            inner = box.adjusted(0, 0.15 * box.height(), 0, -0.15 * box.height())
            hits = int(np.count_nonzero((xs >= inner.left()) & (xs <= inner.right())
                                        & (ys >= inner.top()) & (ys <= inner.bottom())))
            hits += 1000 * sum(inner.top() <= v <= inner.bottom() for v in others)
            if box.top() < y0 or box.bottom() > y1:  # cut by the frame
                hits += 1_000_000
            if best is None or hits < best[0]:
                best = (hits, anchor)
        assert best is not None
        label.anchors = [best[1], best[1]]
        label.updatePosition()
