"""The app on a small laptop screen (1366x768) and at 200 % scale: nothing past the screen's edges.

The offscreen platform's screen is 800x600, smaller than the window's 1440x900 first size, so
it stands in for a small laptop: what fits here fits there.
"""
from __future__ import annotations

import signal

from PySide6.QtCore import QRect
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

import revstudio.qt.app as app_module
from revstudio.qt.main_window import MainWindow


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
