"""The overview from the keyboard: View > Focus Overview (Ctrl+Shift+O) gives it the keys, the arrows
move the view rectangle, Home/End go to the Inputs/Outputs and Escape hands the keys back.

Before, the map answered only the mouse: a keyboard user could not reach it at all.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def _open(make_window: Any, qtbot: Any, name: str = "revnet_wired.revs") -> Any:
    window = make_window()
    window.resize(1600, 1000)
    qtbot.wait(200)
    assert window.files.load_path(str(EXAMPLES / name)) is not False
    qtbot.wait(200)
    overview = window.current_view().overview
    qtbot.waitUntil(lambda: not overview.pending(), timeout=3000)
    window.activateWindow()
    window.current_view().setFocus()
    return window


def _centre(view: Any) -> Any:
    return view.mapToScene(view.viewport().rect().center())


def _shown(view: Any) -> Any:
    return view.mapToScene(view.viewport().rect()).boundingRect()


def _of_type(view: Any, type_id: str) -> list[Any]:
    return [i.sceneBoundingRect() for n, i in view.scene().node_items.items() if view.graph.nodes[n].type == type_id]


def test_ctrl_shift_o_moves_the_keys_to_the_overview_and_escape_back(make_window: Any, qtbot: Any) -> None:
    window = _open(make_window, qtbot)
    view = window.current_view()
    overview = view.overview
    action = window.actions_by_name["focus_overview"]
    assert action.shortcut() == QKeySequence("Ctrl+Shift+O")
    assert action in window.menuBar().actions()[2].menu().actions()  # View > Focus Overview
    assert overview.isVisible() and not overview.hasFocus()
    action.trigger()
    assert overview.hasFocus()
    assert "Arrow keys" in overview.accessibleDescription() and overview.accessibleName() == "Overview"
    QTest.keyClick(overview, Qt.Key.Key_Escape)
    assert view.hasFocus() and not overview.hasFocus()
    action.trigger()
    assert overview.hasFocus()
    action.trigger()  # the same keys again: back to the canvas
    assert view.hasFocus()


def test_arrows_move_the_view_and_home_end_reach_the_inputs_and_outputs(make_window: Any, qtbot: Any) -> None:
    window = _open(make_window, qtbot)
    view = window.current_view()
    overview = view.overview
    window.actions_by_name["focus_overview"].trigger()
    zoom, start, width = view.zoom(), _centre(view), _shown(view).width()
    said = overview.accessibleDescription()
    QTest.keyClick(overview, Qt.Key.Key_Right)
    moved = _centre(view)
    assert abs(moved.x() - start.x() - width / 4) < 3 and abs(moved.y() - start.y()) < 3
    assert overview.accessibleDescription() != said  # a screen reader hears where the view went
    QTest.keyClick(overview, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier)  # a whole screen
    assert abs(_centre(view).x() - moved.x() - width) < 3
    QTest.keyClick(overview, Qt.Key.Key_End)
    outputs = _of_type(view, "Output")
    assert outputs and all(_shown(view).contains(r) for r in outputs)
    assert not any(_shown(view).contains(r) for r in _of_type(view, "Input"))
    for _ in range(40):  # held Right stops at the graph's end: the rectangle stays on the map
        QTest.keyClick(overview, Qt.Key.Key_Right)
    assert _shown(view).right() <= overview._world.right() + 3
    QTest.keyClick(overview, Qt.Key.Key_Home)
    assert all(_shown(view).contains(r) for r in _of_type(view, "Input"))
    assert view.zoom() == zoom  # the keys pan; they never zoom
    assert overview.hasFocus()  # (none of these keys reached the canvas, where Home fits all)


def test_the_overview_shows_it_has_the_keys(make_window: Any, qtbot: Any) -> None:
    window = _open(make_window, qtbot)
    view = window.current_view()
    overview = view.overview
    hover = view.scene().theme.hover

    def edge() -> QColor:
        ratio = overview.devicePixelRatioF()
        return overview.grab().toImage().pixelColor(QPoint(1, overview.height() // 2) * ratio)

    def far(a: QColor, b: QColor) -> int:
        return abs(a.red() - b.red()) + abs(a.green() - b.green()) + abs(a.blue() - b.blue())

    assert far(edge(), hover) > 60
    window.actions_by_name["focus_overview"].trigger()
    assert far(edge(), hover) < 30


def test_focus_overview_turns_the_map_on(make_window: Any, qtbot: Any) -> None:
    window = _open(make_window, qtbot)
    overview = window.current_view().overview
    window.actions_by_name["overview"].trigger()  # View > Overview off
    assert not overview.isVisible()
    window.actions_by_name["focus_overview"].trigger()
    assert window.actions_by_name["overview"].isChecked()
    assert overview.isVisible() and overview.hasFocus()


def test_with_the_whole_graph_in_view_the_keys_stay_and_the_status_bar_says_why(make_window: Any,
                                                                               qtbot: Any) -> None:
    window = _open(make_window, qtbot)
    view = window.current_view()
    window.actions_by_name["focus_overview"].trigger()
    window.actions_by_name["fit"].trigger()  # everything in view: the map hides, the keys go home
    QApplication.processEvents()
    assert not view.overview.isVisible() and view.hasFocus()
    window.actions_by_name["focus_overview"].trigger()
    assert view.hasFocus()
    assert "whole graph is in view" in window.statusBar().currentMessage()


def test_no_two_actions_share_a_key(make_window: Any) -> None:
    window = make_window()
    seen: dict[str, str] = {}
    clash = []
    for name, action in window.actions_by_name.items():
        for key in action.shortcuts():
            text = key.toString()
            if text in seen and seen[text] != name:
                clash.append((text, seen[text], name))
            seen[text] = name
    assert "Ctrl+Shift+O" in seen
    assert not clash
