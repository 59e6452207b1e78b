"""The Gradient Check window's summary lies below the plot's axis, never over its labels.

Under a real window with no window manager (a frozen build's first probe) a narrow window wrapped
the summary to more lines than its layout had room for: the plot, at its minimum height for the
bars, kept its place and the summary's first line was drawn over the axis's tick labels and title.
"""
from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QRect
from PySide6.QtWidgets import QApplication

from revstudio.qt import theme
from revstudio.qt.plots.diagnostic_plots import DiagnosticsDialog

ROWS = 30
RESULT = {"ok": True, "tolerance": 1e-10, "max_error": 1e-12, "mode": "reversible", "dtype": "float64", "batch": 4,
          "max_inversion_error": 3e-15, "inversion_error": {"r0": 3e-15},
          "parameters": {f"block{i}.f.weight": {"error": 10.0 ** -(12 + i % 5)} for i in range(ROWS)},
          "input_batch": {"describe": "a random batch of 4 (the project has no data: training.data is synthetic)"},
          "checkpoint": "runs/digits-20260101/checkpoints/last.pt", "step": 400}


def _axis_rect(dialog: DiagnosticsDialog) -> QRect:
    """The bottom axis (ticks, tick labels and title) in the dialog's coordinates."""
    plot = dialog.plot
    assert plot is not None
    axis = plot.getPlotItem().getAxis("bottom")
    in_view = plot.mapFromScene(axis.mapRectToScene(axis.boundingRect())).boundingRect()
    return QRect(plot.mapTo(dialog, in_view.topLeft()), in_view.size())


@pytest.fixture()
def text_scale() -> Any:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    before = theme.text_scale()

    def use(percent: int) -> None:
        theme.set_text_scale(app, percent)

    yield use
    theme.set_text_scale(app, before)


@pytest.mark.parametrize("percent", [100, 150, 200])
@pytest.mark.parametrize("size", [(820, 520), (600, 380), (480, 300)])
def test_the_summary_never_covers_the_axis(qtbot: Any, text_scale: Any, percent: int, size: tuple[int, int]) -> None:
    text_scale(percent)
    dialog = DiagnosticsDialog("Gradient Check", "gradcheck", RESULT)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.resize(*size)
    for _ in range(5):
        QApplication.processEvents()
    summary = dialog.summary.geometry()
    axis = _axis_rect(dialog)
    assert not summary.intersects(axis), (size, percent, summary, axis)
    assert summary.top() >= axis.bottom()
    assert summary.height() >= dialog.summary.heightForWidth(summary.width())  # every line shown
    assert dialog.rect().contains(summary)
