"""Axis titles and tick labels lie whole inside their plot at every width down to the window's least.

pyqtgraph centres an axis title on its axis at its full length: a narrow Gradient Check window drew
"normalised disagreement with standard autograd (log scale; exact = 1e-20)" past the plot's right
edge, cut mid-word. The same check runs over the Measure Memory window and the Train tab's plots.
"""
from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QApplication

from revstudio.qt import theme
from revstudio.qt.plots.diagnostic_plots import DiagnosticsDialog

ROWS = 12
GRADCHECK = {"ok": True, "tolerance": 1e-10, "max_error": 1e-12, "mode": "reversible", "dtype": "float64",
             "batch": 4, "max_inversion_error": 3e-15, "inversion_error": {"r0": 3e-15},
             "parameters": {f"block{i}.f.weight": {"error": 10.0 ** -(12 + i % 5)} for i in range(ROWS)}}
MEMORY = {"batch": 8, "device": "cpu", "measured_with": "live tensors",
          "modes": {"standard": {"peak_bytes": 3_500_000}, "checkpoint": {"peak_bytes": 2_100_000},
                    "reversible": {"peak_bytes": 1_200_000}},
          "estimate": {"modes": {"standard": {"peak_bytes": 3_400_000}, "reversible": {"peak_bytes": 1_250_000}}}}


@pytest.fixture()
def text_scale() -> Any:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    before = theme.text_scale()
    yield lambda percent: theme.set_text_scale(app, percent)
    theme.set_text_scale(app, before)


def _settle() -> None:
    for _ in range(5):
        QApplication.processEvents()


def _outside(plot: Any) -> list[str]:
    """Each axis title or tick label of ``plot`` that is not wholly inside the plot's view."""
    view = plot.mapToScene(plot.viewport().rect()).boundingRect()  # (in the scene: no rounding to pixels)
    bad = []
    item = plot.getPlotItem()
    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        for name in ("left", "bottom"):
            axis = item.getAxis(name)
            if axis.label.isVisible():
                margin = axis.label.document().documentMargin()  # (blank room around the text, in its rect)
                text_rect = axis.label.boundingRect().adjusted(margin, margin, -margin, -margin)
                title = axis.label.mapRectToScene(text_rect)
                if not view.contains(title):
                    bad.append(f"{name} title {axis.label.toPlainText()!r} at {title} in {view}")
            specs = axis.generateDrawSpecs(painter)
            for rect, _flags, text in specs[2] if specs else []:
                shown = axis.mapRectToScene(rect)
                if not view.contains(shown):
                    bad.append(f"{name} tick {text!r} at {shown} in {view}")
    finally:
        painter.end()
    return bad


def _dialog(qtbot: Any, kind: str) -> DiagnosticsDialog:
    dialog = DiagnosticsDialog("Gradient Check" if kind == "gradcheck" else "Memory", kind,
                               GRADCHECK if kind == "gradcheck" else MEMORY)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    return dialog


@pytest.mark.parametrize("percent", [100, 200])
@pytest.mark.parametrize("kind", ["gradcheck", "memory"])
def test_diagnostics_axis_titles_stay_inside_at_every_width(qtbot: Any, text_scale: Any, kind: str,
                                                             percent: int) -> None:
    text_scale(percent)
    dialog = _dialog(qtbot, kind)
    least = dialog.minimumSizeHint().width()
    for width in (820, 600, 480, 400, least):
        dialog.resize(max(width, least), 560)
        _settle()
        assert dialog.plot is not None
        assert _outside(dialog.plot) == [], (kind, percent, dialog.width())


def test_a_shortened_title_says_the_whole_one_in_its_tooltip(qtbot: Any) -> None:
    dialog = _dialog(qtbot, "gradcheck")
    assert dialog.plot is not None
    axis = dialog.plot.getAxis("bottom")
    dialog.resize(820, 560)
    _settle()
    whole = "normalised disagreement with standard autograd (log scale; exact = 1e-20)"
    assert axis.shown_title == whole and axis.label.toolTip() == ""
    dialog.resize(dialog.minimumSizeHint().width(), 560)
    _settle()
    assert axis.shown_title in axis.short_titles  # a word-whole shorter form, not the title cut
    assert axis.label.toolTip() == whole
    dialog.resize(820, 560)
    _settle()
    assert axis.shown_title == whole  # whole again once the window is wide again


def test_the_diagnostics_window_keeps_room_for_its_plot(qtbot: Any) -> None:
    """At its least width the plot still has a view beside its names (it could be narrowed to 126 px)."""
    dialog = _dialog(qtbot, "gradcheck")
    dialog.resize(10, 560)
    _settle()
    assert dialog.plot is not None
    view = dialog.plot.getPlotItem().getViewBox().sceneBoundingRect()
    assert view.width() >= 120, view


def test_train_tab_plots_keep_their_axis_titles_inside(qtbot: Any) -> None:
    from revstudio.qt.plots.panel import PlotsPanel

    panel = PlotsPanel()
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    for plot in panel.plots:
        plot.set_axis("time")  # the longest bottom title: "wall time (s)"
    least = panel.minimumSizeHint()
    for width, height in ((1200, 700), (600, 500), (least.width(), least.height())):
        panel.resize(max(width, least.width()), max(height, least.height()))
        _settle()
        for plot in panel.plots:
            assert _outside(plot.plot) == [], (plot.objectName(), panel.size(), plot.plot.size())
