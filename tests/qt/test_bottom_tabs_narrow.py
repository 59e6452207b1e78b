"""The Output dock's tab bar in a narrow window: tab names shrink ("Mem…") before any tab
goes behind scroll arrows (at 900 px and 200 % scale the Log tab was hidden)."""
from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QApplication, QLabel, QToolButton

from revstudio.qt.bottom_panel import BottomPanel


def test_every_output_tab_shows_in_a_narrow_dock(qtbot: Any) -> None:
    panel = BottomPanel(QLabel("no problems"))
    qtbot.addWidget(panel)
    panel.add_tab(QLabel("code"), "Code")
    panel.add_tab(QLabel("memory"), "Memory")
    panel.set_problem_count(2, 1)
    bar = panel.tabBar()
    full = bar.sizeHint().width()
    panel.resize(full - 60, 200)  # narrower than the names need
    panel.show()
    QApplication.processEvents()
    assert bar.width() < full
    arrows = [b for b in bar.findChildren(QToolButton) if b.isVisible()]
    assert not arrows, "tabs went behind scroll arrows"
    for i in range(bar.count()):
        rect = bar.tabRect(i)
        assert rect.left() >= 0 and rect.right() <= bar.width(), f"tab {bar.tabText(i)!r} is cut off"
    assert [bar.tabText(i) for i in range(bar.count())] == \
        ["Problems (3)", "Plots", "Runs", "Code", "Memory", "Log"]  # only the drawing elides
    # elided names read alike ("P…" is Problems or Plots): each tab names itself on hover
    assert [bar.tabToolTip(i) for i in range(bar.count())] == [bar.tabText(i) for i in range(bar.count())]
