"""What a screenshot pass found: words cut off, text too faint, dialogs taller than a screen.

Each test measures the widget (its text against its width, its colour against
its background, its rect inside its parent) instead of comparing pictures.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(params=["dark", "light"])
def themed(request: Any, qapp: Any) -> Iterator[str]:
    """The app in one theme (its stylesheet pads buttons and sets plot colours), dark again after."""
    from revstudio.qt import theme

    theme.apply_theme(qapp, request.param)
    yield request.param
    theme.apply_theme(qapp, "dark")


def test_runs_buttons_keep_their_words_in_a_narrow_output_panel(qtbot: Any, themed: str) -> None:
    # At a 900x600 window the Output panel is ~430 px wide: the button row squeezed
    # "Gradient Check" to "ient C" and "Compare Settings" to "are Se".
    from revstudio.qt.runs.panel import RunsPanel

    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.setMinimumSize(120, 60)  # as the Output dock lets it shrink (dock_sizes.MIN_PANEL)
    panel.resize(430, 300)
    panel.show()
    qtbot.waitExposed(panel)
    assert panel.width() == 430
    for name, button in panel.buttons.items():
        text_width = button.fontMetrics().horizontalAdvance(button.text())
        assert button.width() >= text_width + 8, f"{name}: {button.width()} px for {text_width} px of text"
        assert panel.rect().contains(button.geometry()), f"{name} lies outside the panel"


def _contrast(a: Any, b: Any) -> float:
    """WCAG contrast ratio of two QColors."""
    def lum(c: Any) -> float:
        def lin(v: float) -> float:
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * lin(c.redF()) + 0.7152 * lin(c.greenF()) + 0.0722 * lin(c.blueF())
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


MEMORY_RESULT = {"batch": 8, "device": "cpu", "measured_with": "live tensor accounting",
                 "modes": {"standard": {"peak_bytes": 400_000}, "reversible": {"peak_bytes": 300_000}},
                 "estimate": {"modes": {"standard": {"peak_bytes": 400_000}, "reversible": {"peak_bytes": 310_000}}}}


def _plot_texts(plot: Any) -> list[tuple[str, Any]]:
    """(what, colour) of every axis's text and every legend label of a pyqtgraph PlotWidget."""
    from PySide6.QtGui import QColor

    item = plot.getPlotItem()
    found = [(f"{name} axis", item.getAxis(name).textPen().color()) for name in ("left", "bottom")]
    found += [(f"{name} axis label", QColor(item.getAxis(name).labelStyle["color"])) for name in ("left", "bottom")]
    for _sample, label in item.legend.items if item.legend is not None else []:
        found.append((f"legend {label.text!r}", QColor(label.opts["color"])))
    return found


def test_plot_text_is_readable_in_both_themes(qtbot: Any, themed: str) -> None:
    # pyqtgraph's fixed grey (150,150,150) stood at 2.7:1 on the light theme's window colour.
    from PySide6.QtGui import QColor

    from revstudio.qt import theme
    from revstudio.qt.plots.diagnostic_plots import memory_widget
    from revstudio.qt.plots.metric_plot import Channel, MetricPlot

    background = QColor(theme.colors().window)
    memory, _text = memory_widget(MEMORY_RESULT)
    metric = MetricPlot("Loss", [Channel("loss", "loss")], "loss")
    for widget in (memory, metric):
        qtbot.addWidget(widget)
    for what, colour in _plot_texts(memory) + _plot_texts(metric.plot):
        assert _contrast(colour, background) >= 4.5, f"{themed}: {what} {colour.name()} on {background.name()}"


def test_a_legend_over_the_curves_has_a_backing_in_the_windows_colour(qtbot: Any, themed: str) -> None:
    # The legends sit top right, where a rising curve (accuracy) ends: its line ran through them.
    from PySide6.QtGui import QColor

    from revstudio.qt import theme
    from revstudio.qt.plots.metric_plot import Channel, MetricPlot

    metric = MetricPlot("Accuracy", [Channel("accuracy", "accuracy")], "accuracy")
    qtbot.addWidget(metric)
    backing = metric.plot.getPlotItem().legend.brush().color()
    assert backing.rgb() == QColor(theme.colors().window).rgb() and backing.alpha() >= 150


def test_open_plots_follow_a_theme_switch(make_window: Any, qtbot: Any) -> None:
    from PySide6.QtGui import QColor

    from revstudio.qt import theme
    from revstudio.qt.plots.diagnostic_plots import memory_widget

    window = make_window()
    window.set_theme("dark")
    plot, _text = memory_widget(MEMORY_RESULT)
    qtbot.addWidget(plot)
    try:
        window.set_theme("light")
        background = QColor(theme.colors().window)
        for what, colour in _plot_texts(plot):
            assert _contrast(colour, background) >= 4.5, f"after the switch: {what} {colour.name()}"
    finally:
        window.set_theme("dark")


def test_shortcuts_list_fits_a_laptop_screen(make_window: Any, dialogs: Any, qtbot: Any, monkeypatch: Any) -> None:
    # F1's list was one column ~950 px tall: on a 1366x768 screen its OK button lay below the
    # screen's edge. Redo's keys also ended in "Redo" (Qt's dedicated Redo key), read as a typo.
    from revstudio.qt.info_dialog import InfoDialog

    window = make_window()
    said: list[tuple[str, str]] = []
    monkeypatch.setattr(dialogs, "info", lambda parent, title, text: said.append((title, text)))
    window.show_shortcuts()
    title, text = said[0]
    box = InfoDialog(window, title, text)  # as Dialogs.info shows it
    qtbot.addWidget(box)
    box.show()
    qtbot.waitExposed(box)
    assert box.height() <= 700, f"the shortcuts list is {box.height()} px tall"
    assert box.width() <= 1280
    assert ", Redo<" not in text and "Ctrl+Shift+Z" in text and "Ctrl+Y" in text
    for action in ("Train", "Run Settings", "Keyboard Shortcuts", "Dark Theme"):
        assert action in text
    box.close()


def test_memory_chart_legend_stays_clear_of_the_bars(qtbot: Any) -> None:
    # Run > Measure Memory at Training Batch's chart: the legend sat on the standard mode's bars, its grey
    # labels over blue and grey fills.
    from PySide6.QtCore import QCoreApplication, QPointF

    from revstudio.qt.plots.diagnostic_plots import memory_widget

    plot, _text = memory_widget(MEMORY_RESULT)
    qtbot.addWidget(plot)
    plot.resize(800, 420)  # as in its 820x520 dialog
    plot.show()
    qtbot.waitExposed(plot)
    for _ in range(3):  # pyqtgraph applies its automatic range on the next event loop turn
        QCoreApplication.processEvents()
    item = plot.getPlotItem()
    tallest = max(400_000, 310_000)
    bar_top = item.getViewBox().mapViewToScene(QPointF(0, tallest)).y()
    legend_bottom = item.legend.sceneBoundingRect().bottom()
    assert legend_bottom < bar_top, f"legend reaches y={legend_bottom:.0f}, bars start at y={bar_top:.0f}"
