"""Preferences > Text size: larger text in menus, panels, dialogs and plot legends, without scaling the screen.

A low-vision user had only QT_SCALE_FACTOR, which scales everything (and needs a restart); the
stylesheet's own sizes (the inspector's title, 15 px; a section's title and a field's error, 11 px) and the
plots' 8 pt legends stayed small whatever the system font.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from revstudio.qt import theme
from revstudio.qt.settings import Settings


@pytest.fixture
def normal_text(qapp: Any) -> Iterator[float]:
    """The application font's size at 100 %; the text size is put back after the test."""
    theme.set_text_scale(qapp, 100)
    yield QApplication.font().pointSizeF()
    theme.set_text_scale(qapp, 100)


def test_preferences_text_size_enlarges_the_window_at_once_and_is_kept(make_window: Any, qtbot: Any, settle: Any,
                                                                      revnet: Any, normal_text: float) -> None:
    window = make_window(revnet)
    title = window.inspector.title
    title_before = title.fontInfo().pixelSize()
    dialog = window.show_preferences()
    assert [dialog.text_size.itemData(i) for i in range(dialog.text_size.count())] == list(theme.TEXT_SCALES)
    dialog.text_size.setCurrentIndex(dialog.text_size.findData(150))
    dialog.accept()
    settle()
    assert QApplication.font().pointSizeF() == pytest.approx(normal_text * 1.5)
    assert window.node_palette.tree.font().pointSizeF() == pytest.approx(normal_text * 1.5)  # a panel's text
    title.ensurePolished()
    assert title.fontInfo().pixelSize() >= round(title_before * 1.5) - 1  # the stylesheet's 15 px too
    assert "font-size: 16px" in theme.stylesheet("dark")  # the section titles' 11 px
    assert Settings().text_scale == 150  # kept for the next start
    again = window.show_preferences()
    assert again.text_size.currentData() == 150
    again.reject()


def test_plot_legends_follow_the_text_size(qtbot: Any, qapp: Any, normal_text: float) -> None:
    from revstudio.qt.plots.metric_plot import Channel, MetricPlot
    from revstudio.qt.plots.plot_theme import restyle_all

    plot = MetricPlot("Loss", [Channel("loss", "loss")])
    qtbot.addWidget(plot)
    legend = plot.plot.getPlotItem().legend
    assert legend.opts["labelTextSize"] == "8pt"
    theme.set_text_scale(qapp, 200)
    restyle_all()
    assert legend.opts["labelTextSize"] == "16pt"
    assert "QCheckBox::indicator { width: 30px; height: 30px;" in theme.stylesheet("light")  # the box by its words
    late = MetricPlot("Accuracy", [Channel("accuracy", "accuracy")])  # one made after the change
    qtbot.addWidget(late)
    assert late.plot.getPlotItem().legend.opts["labelTextSize"] == "16pt"


def test_a_text_size_out_of_range_is_brought_back(qapp: Any, normal_text: float) -> None:
    settings = Settings()
    settings.text_scale = 900
    assert settings.text_scale == 200
    theme.set_text_scale(qapp, 20)
    assert theme.text_scale() == 100


def test_run_settings_fits_a_laptop_at_the_largest_text(qtbot: Any, qapp: Any, monkeypatch: Any,
                                                       normal_text: float) -> None:
    """At 200 % text on a 1366x768 laptop (1x) Run Settings scrolls its form: OK stays on screen."""
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QScreen

    from revstudio.core.graph import Graph
    from revstudio.qt.document import Document
    from revstudio.qt.training.settings_dialog import RunSettingsDialog

    monkeypatch.setattr(QScreen, "availableGeometry", lambda _self: QRect(0, 0, 1366, 768 - 40))
    theme.set_text_scale(qapp, 200)
    dialog = RunSettingsDialog(Document(Graph()))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    qtbot.wait(50)
    assert dialog.width() <= 1366 - 16 and dialog.height() <= 768 - 40 - 40, dialog.size()
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert dialog.rect().contains(ok.geometry().translated(dialog.buttons.pos())), ok.geometry()


@pytest.mark.parametrize("screen", [(1366, 768), (1280, 800)])
def test_run_settings_never_scrolls_sideways_at_any_text_size(qtbot: Any, qapp: Any, monkeypatch: Any,
                                                              normal_text: float, screen: tuple[int, int]) -> None:
    """At 200 % on a 1366x768 laptop (175 % at 1280x800) Optimisation and Run side by side were wider
    than the screen: the form scrolled sideways. Too wide, Run goes below Optimisation."""
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QScreen

    from revstudio.core.graph import Graph
    from revstudio.qt.document import Document
    from revstudio.qt.fit_scroll import FRAME
    from revstudio.qt.training.settings_dialog import RunSettingsDialog

    area = QRect(0, 0, screen[0], screen[1] - 40)  # (a task bar)
    monkeypatch.setattr(QScreen, "availableGeometry", lambda _self: area)
    columns = []
    for scale in theme.TEXT_SCALES:
        theme.set_text_scale(qapp, scale)
        dialog = RunSettingsDialog(Document(Graph()))
        qtbot.addWidget(dialog)
        dialog.show()
        qtbot.waitExposed(dialog)
        qtbot.wait(50)  # (it grows towards its content, as far as the screen allows)
        bar = dialog.form.horizontalScrollBar()
        qtbot.waitUntil(lambda bar=bar: bar.maximum() == 0 and not bar.isVisible(), timeout=1000)  # (laid out)
        assert dialog.width() <= area.width() - FRAME.width(), (scale, dialog.width())
        assert dialog.form.widget().width() >= dialog.form.widget().minimumSizeHint().width()
        columns.append(getattr(dialog, "_columns", 2))
        dialog.close()
    assert columns[0] == 2 and columns[-1] == 1  # side by side where they fit, below where not
