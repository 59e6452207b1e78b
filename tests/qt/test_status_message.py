"""The status bar's message is never cut mid-word under the figures at its right: it is laid
out beside them and ends in "…" where it does not fit, its whole text in the tooltip."""
from __future__ import annotations

import pytest

from revstudio.qt.files import examples

# 450 and 640 logical pixels are a 900- and a 1280-pixel-wide screen at scale 2.
WIDTHS = (450, 640, 900, 1280)


def _example(name: str):
    return next(p for p in examples() if p.stem == name)


@pytest.mark.parametrize("width", WIDTHS)
def test_opened_example_message_is_whole_or_elided_never_covered(make_window, settle, qtbot, width):
    window = make_window()
    window.resize(width, 700)
    qtbot.wait(50)
    window.files.open_example(_example("revnet_wired"))
    settle()
    qtbot.wait(50)
    bar = window.statusBar()
    text = "Opened example revnet_wired (a copy: Save As to keep it)"
    assert bar.currentMessage() == text
    label = bar.findChild(type(window.status_memory), "statusMessage")
    assert label is not None and label.isVisible(), "the message has no place of its own in the bar"
    figures = [w for w in bar.figures if w.isVisible()]
    assert figures and all(label.geometry().right() < w.geometry().left() for w in figures), \
        "a figure covers the message"
    shown = label.shown_text()
    if shown != text:
        assert shown.endswith("…") and text.startswith(shown[:-1]), shown
        assert text in label.toolTip()
    bar.clearMessage()
    settle()
    assert label.shown_text() == "" and window.status_memory.isVisible()


def test_a_menu_items_status_tip_goes_to_the_message_label(make_window, settle):
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtGui import QStatusTipEvent

    window = make_window()
    QCoreApplication.sendEvent(window, QStatusTipEvent("Open a project file"))
    assert window.statusBar().currentMessage() == "Open a project file"
    assert window.statusBar().findChild(type(window.status_memory), "statusMessage").text() == "Open a project file"
