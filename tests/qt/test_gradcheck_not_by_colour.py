"""The gradient check's window says which tensors are over tolerance in words and by a pattern.

Its bars were green within tolerance and red over it, and nothing else told them apart: a red-green
colour-blind reader saw one brown (the dark theme's ok and error colours are 19 CIE76 units apart as a
deuteranope sees them, the light theme's 11).
"""
from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt

from revstudio.qt.plots.diagnostic_plots import OVER, gradcheck_widget

RESULT = {"ok": False, "tolerance": 1e-10, "max_error": 1e-3, "mode": "reversible",
          "parameters": {"f.weight": {"error": 1e-17}, "f.bias": {"error": 1e-3}}}


def _bars(plot: Any) -> Any:
    return next(i for i in plot.getPlotItem().items if isinstance(i, pg.BarGraphItem))


def test_a_row_over_tolerance_is_named_so_and_hatched(qtbot: Any) -> None:
    plot, _text = gradcheck_widget(RESULT)
    qtbot.addWidget(plot)
    names = plot.getPlotItem().getAxis("left").names
    assert names == [f"{OVER} parameter f.bias", "parameter f.weight"]  # worst first
    styles = [pg.mkBrush(b).style() for b in _bars(plot).opts["brushes"]]
    assert styles == [Qt.BrushStyle.BDiagPattern, Qt.BrushStyle.SolidPattern]
    legend = plot.getPlotItem().legend
    assert [label.text for _sample, label in legend.items] == ["within tolerance", f"{OVER} over tolerance"]


def test_a_check_that_agrees_marks_nothing(qtbot: Any) -> None:
    agreeing = dict(RESULT, ok=True, parameters={"f.weight": {"error": 1e-17}, "f.bias": {"error": 1e-16}})
    plot, _text = gradcheck_widget(agreeing)
    qtbot.addWidget(plot)
    assert not any(n.startswith(OVER) for n in plot.getPlotItem().getAxis("left").names)
    assert plot.getPlotItem().legend is None  # (one kind of bar: nothing to key)
