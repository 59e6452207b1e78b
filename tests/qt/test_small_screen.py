"""The app on a small laptop screen (1366x768) and at 200 % scale: nothing past the screen's edges.

The offscreen platform's screen is 800x600, smaller than the window's 1440x900 first size, so
it stands in for a small laptop: what fits here fits there.
"""
from __future__ import annotations

import signal

import pytest
from PySide6.QtCore import QRect, QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QDialogButtonBox

import revstudio.qt.app as app_module
from revstudio.core.graph import Graph
from revstudio.qt.document import Document
from revstudio.qt.fit_scroll import DIALOG_ROOM
from revstudio.qt.main_window import MainWindow
from revstudio.qt.training.settings_dialog import RunSettingsDialog


def test_the_window_revstudio_opens_fits_the_screen(qtbot, monkeypatch):
    """A 1366x768 laptop showed the window at 1440x900: the status bar and the inspector's values
    lay past the screen's edges (with no window manager to clamp it, out of reach)."""
    opened: list[MainWindow] = []
    monkeypatch.setattr(app_module, "_tell_about_plugin_problems", opened.append)
    monkeypatch.setattr(QApplication, "exec", lambda *_a: 0)
    monkeypatch.setattr(signal, "signal", lambda *_a: None)
    assert app_module.run_app(None) == 0
    window = opened[0]
    qtbot.addWidget(window)
    screen = QGuiApplication.primaryScreen().availableGeometry()
    assert screen.width() < 1440 and screen.height() < 900  # (else this test shows nothing)
    assert screen.contains(window.frameGeometry()), (window.frameGeometry(), screen)


def test_a_layout_saved_on_a_bigger_monitor_is_brought_back_on_screen(qtbot):
    window = MainWindow()
    qtbot.addWidget(window)
    window.setGeometry(1500, 900, 1900, 1100)  # where a 2560x1440 monitor left it
    laptop = QRect(0, 0, 1366, 740)
    window.fit_to_screen(laptop)
    assert laptop.contains(window.geometry()), window.geometry()
    assert window.width() >= 1300 and window.height() >= 680  # as big as the laptop allows




def test_run_settings_fits_a_small_screen_by_scrolling_its_form(qtbot, laptop_150):
    """Run Settings could not be made smaller than its form (789x544 points, more with an error
    and the budget hint): at 150 % on a 1366x768 laptop its OK button lay below the screen."""
    dialog = RunSettingsDialog(Document(Graph()))
    qtbot.addWidget(dialog)
    dialog.fields["lr"].setText("abc")  # the error line...
    dialog.fields["memory_budget"].setText("1MiB")
    dialog.update_budget_hint()  # ...and the budget hint make it taller still
    least = dialog.minimumSizeHint()
    assert least.width() <= laptop_150.width() and least.height() <= laptop_150.height(), least
    dialog.show()
    qtbot.waitExposed(dialog)
    qtbot.wait(50)  # (it grows towards its content, as far as the screen allows)
    size = dialog.size()
    assert size.width() <= laptop_150.width() and size.height() <= laptop_150.height(), size
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert dialog.rect().contains(ok.geometry().translated(dialog.buttons.pos())), ok.geometry()
    assert dialog.error.isVisible() and dialog.rect().contains(dialog.error.geometry())
    assert dialog.form.verticalScrollBar().maximum() > 0  # the form scrolls instead
    dialog.move(300, 100)  # centred on a main window at 150 %, its right edge was past the screen's
    dialog.form.grow_window()
    assert QRect(0, 0, 910, 512).contains(dialog.geometry()), dialog.geometry()


def test_run_settings_shows_its_whole_form_where_the_screen_has_room(qtbot):
    dialog = RunSettingsDialog(Document(Graph()))
    qtbot.addWidget(dialog)
    content = dialog.form.widget().sizeHint()
    room = QGuiApplication.primaryScreen().availableGeometry().size() - DIALOG_ROOM
    hint = dialog.form.sizeHint()  # not a plain scroll area's cramped 36x24 characters
    assert hint.width() >= min(content.width(), room.width()), (hint, content, room)
    assert hint.height() >= min(content.height(), room.height()), (hint, content, room)


RUNNING = ("revnet-coupling-20261207-025624: running · step 120 / 200 · 20 s elapsed · ETA 12 s · "
           "1,543 samples/s")


def test_a_training_run_does_not_widen_the_window_past_the_screen(make_window, qtbot):
    """At 200 % on a 2560x1440 screen (1280 points) the window grew from 1264 to 1367 points
    wide once a run started: the progress text in the status bar and above the Runs table
    would not shorten, so the inspector went past the screen's right edge."""
    window = make_window()
    progress = window.training.status_progress
    progress.show()
    for widget in (progress, window.training.runs_panel.progress):
        widget.label.setText(RUNNING)
    window.training.show_tab("Runs")
    bar = window.status_bar
    # the status bar's least width is its parts' (QStatusBar re-measures them later, on an event)
    least = bar.message_label.minimumSizeHint().width() + sum(
        w.minimumSizeHint().width() for w in bar.figures if w.isVisible())
    assert least <= 900, [(type(w).__name__, w.minimumSizeHint().width()) for w in bar.figures if w.isVisible()]
    runs = window.training.runs_panel
    assert runs.minimumSizeHint().width() <= 600, runs.minimumSizeHint()
    for widget in (progress, window.training.runs_panel.progress):
        assert widget.label.text() == RUNNING  # whole in text() (and the tooltip when shortened)


@pytest.fixture
def laptop_150(monkeypatch):
    """The screen of a 1366x768 laptop at 150 %: 910x512 points (QScreen as the app asks it)."""
    from PySide6.QtGui import QScreen

    monkeypatch.setattr(QScreen, "availableGeometry", lambda _self: QRect(0, 0, 910, 512))
    return QSize(910 - 16, 512 - 40)  # less a window frame and title bar


def test_run_compare_and_diagnostics_windows_open_within_a_small_screen(qtbot, laptop_150):
    """Compare Settings opened 640x560 and the gradient-check/memory windows 820x520: taller
    than the 512 points of a 1366x768 laptop at 150 %, their bottom edge off screen."""
    from revstudio.qt.plots.diagnostic_plots import DiagnosticsDialog
    from revstudio.qt.training.compare_dialog import CompareDialog

    compare = CompareDialog("run-1", {"lr": 0.1, "steps": 10}, {"lr": 0.01, "steps": 10})
    diagnostics = DiagnosticsDialog("Gradient check", "gradcheck", {"error": "no torch here"})
    for dialog in (compare, diagnostics):
        qtbot.addWidget(dialog)
        size = dialog.size()
        assert size.width() <= laptop_150.width() and size.height() <= laptop_150.height(), (dialog, size)


def test_run_settings_opens_within_a_small_screen(qtbot, laptop_150):
    dialog = RunSettingsDialog(Document(Graph()))
    qtbot.addWidget(dialog)
    hint = dialog.sizeHint()
    assert hint.width() <= laptop_150.width() and hint.height() <= laptop_150.height(), hint


def test_a_closed_run_settings_dialog_leaves_the_screen_alive(qtbot):
    """Asking ``widget.screen()`` made PySide parent the QScreen's wrapper to the dialog: once the
    dialog was deleted every reference to the screen raised 'Internal C++ object already deleted'."""
    import shiboken6

    screen = QGuiApplication.primaryScreen()
    dialog = RunSettingsDialog(Document(Graph()))
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.sizeHint()
    dialog.reject()
    shiboken6.delete(dialog)
    assert shiboken6.isValid(screen)
    assert screen.availableGeometry().width() > 0


def test_run_settings_does_not_scroll_where_the_screen_has_room(qtbot, monkeypatch):
    """Qt opens a dialog at most two thirds of the screen tall: on a 1366x768 screen Run Settings
    opened 512 pixels tall and scrolled its form, with room to spare below it."""
    from PySide6.QtGui import QScreen

    monkeypatch.setattr(QScreen, "availableGeometry", lambda _self: QRect(0, 0, 1366, 768))
    dialog = RunSettingsDialog(Document(Graph()))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    bars = (dialog.form.verticalScrollBar(), dialog.form.horizontalScrollBar())
    qtbot.waitUntil(lambda: all(bar.maximum() == 0 for bar in bars), timeout=2000)


def test_memory_tab_controls_wrap_in_a_narrow_output_panel(qtbot):
    """At 150 % on a 1366x768 laptop the Output panel is about 600 points wide: the Memory tab's
    one row of controls and progress words (568 px at least) scrolled sideways, Cancel and the
    'measuring…' words out of sight."""
    from revstudio.qt.memory_panel import MemoryPanel

    panel = MemoryPanel(Document(Graph()))
    qtbot.addWidget(panel)
    panel.status.setText("measuring one training step per mode at batch 32…")
    assert panel.minimumSizeHint().width() <= 400, panel.minimumSizeHint()
    panel.resize(400, 300)
    panel.show()
    qtbot.waitExposed(panel)
    for widget in (panel.measure_button, panel.cancel_button, panel.status):
        box = widget.geometry()
        assert panel.rect().contains(box), (widget, box)


def test_memory_chart_hint_wraps_in_a_narrow_output_panel(qtbot):
    """Before any measurement the Memory tab's chart says 'Press Measure Memory to see measured
    figures beside the estimate' on one centred line: in a narrow Output panel (a 1000 px window)
    both its ends were cut off, reading 'sure Memory to see measured figures beside th'."""
    from revstudio.qt.memory_panel import BarChart

    chart = BarChart()
    qtbot.addWidget(chart)
    chart.resize(220, 150)
    image = chart.grab().toImage()
    ground = image.pixelColor(chart.width() // 2, 1)  # (the hint is centred: the top row is bare)
    inked = [(x, y) for x in (0, 1, chart.width() - 2, chart.width() - 1) for y in range(chart.height())
             if image.pixelColor(x, y) != ground]
    assert not inked, f"the hint runs past the chart's edges at {inked[:4]}"
    middle = [y for y in range(chart.height()) if any(image.pixelColor(x, y) != ground
                                                      for x in range(chart.width()))]
    assert middle, "no hint drawn at all"
