"""From the fourth run overlaid on, a run's curves have dashes of their own, not only a colour.

The palette keeps three runs apart for a red-green colour-blind reader, no more: a fourth run's
colour is the one least like the others, which such a reader may take for one of them. Its
curves, and its line in the legend, now also have a style no other shown run's curve has.
"""
from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QApplication

from revstudio.qt import theme
from revstudio.qt.plots.legend_fit import LineSample
from revstudio.qt.plots.panel import PlotsPanel

from .conftest import plotted_run


def _with_val(name: str) -> Any:
    run = plotted_run(name)
    for s in (10, 20):
        run.feed({"kind": "val", "step": s, "epoch": s / 10, "time": s * 0.1, "val_loss": 2.0 / s})
    return run


def _style(pen: Any) -> tuple[Any, ...]:
    """What tells one line from another besides its colour: solid, or the dash pattern."""
    if pen.style() == Qt.PenStyle.SolidLine:
        return ("solid",)
    return tuple(pen.dashPattern())


def _sample_runs(image: Any, colour: str) -> int:
    """How many separate stretches of ``colour`` a legend sample's middle row has (a solid line: 1)."""
    y = image.height() // 2
    row = [image.pixelColor(x, y).name() == colour for x in range(image.width())]
    return sum(1 for x, on in enumerate(row) if on and (x == 0 or not row[x - 1]))


@pytest.mark.parametrize("name", ["dark", "light"])
def test_runs_past_the_third_have_line_styles_no_other_shown_run_has(qtbot: Any, name: str) -> None:
    start = theme.current()
    theme.apply_theme(QApplication.instance(), name)  # type: ignore[arg-type]
    try:
        panel = PlotsPanel()
        qtbot.addWidget(panel)
        names = [f"run-{i}" for i in range(6)]
        panel.set_runs([_with_val(n) for n in names])
        curves = panel.loss.curves
        train = [_style(curves[(n, "loss")].smooth.opts["pen"]) for n in names]
        val = [_style(curves[(n, "val_loss")].smooth.opts["pen"]) for n in names]
        assert train[:3] == [("solid",)] * 3  # the first three: colour alone, as before
        assert len(set(val[:3])) == 1 and val[0] != ("solid",)
        # from the fourth on, every curve's style is its own among all the curves shown
        for k in range(3, 6):
            others = train[:k] + train[k + 1:] + val[:k] + val[k + 1:]
            assert train[k] not in others and val[k] not in others, (k, train, val)
        # the faint raw curve under the smoothed one keeps the run's style
        assert curves[(names[3], "loss")].raw.opts["pen"].style() != Qt.PenStyle.SolidLine
        # the legend's line for the fourth run is drawn dashed, the first run's whole
        panel.resize(1000, 700)
        panel.show()
        qtbot.waitExposed(panel)
        legend = panel.loss.plot.getPlotItem().legend
        samples = {label.text: sample for sample, label in legend.items if isinstance(sample, LineSample)}
        for run_name, solid in ((names[0], True), (names[3], False)):
            colour = panel.colours[run_name]
            image = QImage(20, LineSample.HEIGHT, QImage.Format.Format_ARGB32)  # (the sample as the legend paints it)
            image.fill(0)
            painter = QPainter(image)
            samples[run_name].paint(painter, None, None)
            painter.end()
            stretches = _sample_runs(image, colour)
            assert (stretches == 1) if solid else (stretches >= 2), (run_name, stretches)
    finally:
        theme.apply_theme(QApplication.instance(), start)  # type: ignore[arg-type]


def test_a_run_moved_to_the_fourth_place_is_redrawn_in_its_new_style(qtbot: Any) -> None:
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    runs = {n: _with_val(n) for n in ("a", "b", "c", "d")}
    panel.set_runs([runs[n] for n in "abcd"])
    assert _style(panel.loss.curves[("d", "loss")].smooth.opts["pen"]) != ("solid",)
    panel.set_runs([runs[n] for n in "dabc"])  # d first now, c fourth
    assert _style(panel.loss.curves[("d", "loss")].smooth.opts["pen"]) == ("solid",)
    assert _style(panel.loss.curves[("c", "loss")].smooth.opts["pen"]) != ("solid",)
