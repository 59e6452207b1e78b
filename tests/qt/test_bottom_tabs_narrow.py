"""The Output dock's tab bar in a narrow window: where the names do not fit, the tabs show icons with
tight padding (the name on hover and for screen readers) before any tab goes behind scroll arrows
(at 900 px and 200 % scale, 450 logical px, the Log tab was hidden: most of a tab was padding)."""
from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QApplication, QLabel, QToolButton

from revstudio.qt.bottom_panel import BottomPanel

NAMES = ["Problems", "Plots", "Runs", "Code", "Memory", "Log"]


def _reachable(bar: Any) -> None:
    arrows = [b for b in bar.findChildren(QToolButton) if b.isVisible()]
    assert not arrows, "tabs went behind scroll arrows"
    for i in range(bar.count()):
        rect = bar.tabRect(i)
        assert rect.left() >= 0 and rect.right() <= bar.width(), f"tab {bar.tabToolTip(i)!r} is cut off"


def test_every_output_tab_shows_in_a_narrow_dock(qtbot: Any) -> None:
    panel = BottomPanel(QLabel("no problems"))
    qtbot.addWidget(panel)
    panel.add_tab(QLabel("code"), "Code")
    panel.add_tab(QLabel("memory"), "Memory")
    panel.set_problem_count(2, 1)
    panel.resize(220, 200)  # the Output dock of a 900 px window at 200 % scale
    panel.show()
    QApplication.processEvents()
    bar = panel.tabBar()
    _reachable(bar)
    assert panel.compact
    assert [panel.title(i) for i in range(bar.count())] == NAMES  # lookups by name still work
    assert panel.tab("Memory") is panel.widget(4)
    assert bar.tabText(0) == "3"  # the problem count stays in sight
    labels = ["Problems (3)", *NAMES[1:]]
    assert [bar.tabToolTip(i) for i in range(bar.count())] == labels
    assert [bar.accessibleTabName(i) for i in range(bar.count())] == labels
    assert all(not bar.tabIcon(i).isNull() for i in range(bar.count()))
    panel.resize(900, 200)  # room again: the names come back, without icons
    QApplication.processEvents()
    _reachable(bar)
    assert [bar.tabText(i) for i in range(bar.count())] == labels
    assert all(bar.tabIcon(i).isNull() for i in range(bar.count()))


def test_the_output_dock_fits_the_share_of_a_450_px_window(make_window: Any, qtbot: Any) -> None:
    # the Code tab's row of buttons asked for 478 px, so in a 450 px window (900 px at 200 %) the
    # dock ran past the window's edge, its Log tab with it
    window = make_window()
    assert window.bottom.minimumSizeHint().width() <= 220, window.bottom.minimumSizeHint()
