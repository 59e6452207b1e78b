"""Panels come back after the window is shrunk and enlarged; small windows keep a canvas."""
from __future__ import annotations


def _sizes(window):
    return {"palette": window.palette_dock.width(), "inspector": window.inspector_dock.width(),
            "bottom": window.bottom_dock.height(), "canvas_w": window.tabs.width(), "canvas_h": window.tabs.height()}


def _resize(window, qtbot, w, h):
    window.resize(w, h)
    qtbot.wait(400)  # the layout settles, then the keeper restores proportions


def test_panels_recover_after_a_trip_to_560x380(make_window, qtbot):
    window = make_window()
    _resize(window, qtbot, 1440, 900)
    big = _sizes(window)
    assert big["palette"] >= 200 and big["inspector"] >= 280
    _resize(window, qtbot, 560, 380)
    small = _sizes(window)
    assert small["canvas_w"] >= 200, small  # the canvas is not squeezed to 50 px
    assert small["canvas_h"] >= 120, small
    assert small["bottom"] <= 0.35 * 380, small  # Output gives way too
    _resize(window, qtbot, 1440, 900)
    again = _sizes(window)
    for key in ("palette", "inspector", "bottom"):
        assert abs(again[key] - big[key]) <= 12, (key, big, again)


def test_a_panel_width_the_user_chose_is_kept(make_window, qtbot):
    from PySide6.QtCore import Qt

    window = make_window()
    _resize(window, qtbot, 1440, 900)
    window.resizeDocks([window.palette_dock], [300], Qt.Orientation.Horizontal)  # as a separator drag does
    qtbot.wait(300)
    assert abs(window.palette_dock.width() - 300) <= 8
    _resize(window, qtbot, 700, 500)
    _resize(window, qtbot, 1440, 900)
    assert abs(window.palette_dock.width() - 300) <= 12
