"""A plot's legend lies where its curves are not: after a 150-step digits run the accuracy plot's
legend sat in pyqtgraph's top-right corner, over the curve rising into it (and the gradient
check's over its error line), in both themes."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF

from tests.qt.gui_training.test_plot_fit import _plots_window


def _covered(plot) -> list[str]:
    """Curve points (sampled densely along each drawn line) that the legend's box covers."""
    item = plot.plot.getPlotItem()
    vb, legend = item.getViewBox(), item.legend
    box = legend.sceneBoundingRect()
    found = []
    for key, curve in plot.curves.items():
        for line in (curve.raw, curve.smooth):
            xs, ys = line.getData()
            if xs is None or len(xs) < 2:
                continue
            at = np.linspace(xs[0], xs[-1], 400)
            for x, y in zip(at, np.interp(at, xs, ys)):
                if box.contains(vb.mapViewToScene(QPointF(float(x), float(y)))):
                    found.append(f"{key} at ({x:.0f}, {y:.3g})")
    return found


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_legends_cover_no_curve_after_a_digits_run(make_window, qtbot, theme):
    window, panel = _plots_window(make_window, qtbot, theme, 1280, ["region-block0_split"])
    accuracy = next(p for p in panel.plots if p.title_text == "Accuracy")
    shown = [p for p in panel.plots if p.plot.getPlotItem().legend.isVisible()]
    assert accuracy in shown and panel.gradcheck in shown
    for plot in shown:
        assert not _covered(plot), (plot.title_text, _covered(plot)[:5])
