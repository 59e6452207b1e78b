"""A real window under Xvfb: Run > Memory vs Depth in Memory Tab on revnet_coupling, drawn and shot.

The app runs in a child process on the xcb platform (test_real_window.py's harness); the menu
action shows the Memory tab and starts the sweep's child; once it is back the plot must be on
screen, inside the tab, with a line per mode and the growth per block in its legend. The shot is
tests/qt/screenshots/memory_vs_depth.png (and _light.png after a theme switch).
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_real_window import DRIVER_LOOP, SCREENSHOTS, App, driver_head, xvfb  # noqa: F401 - xvfb is a fixture

pytestmark = [pytest.mark.xvfb, pytest.mark.slow]

CHILD = driver_head(1600, 1000) + r"""
def answer(req):
    cmd = req["cmd"]
    if cmd == "sweep":
        window.bottom_dock.show()
        window.resizeDocks([window.bottom_dock], [req["height"]], Qt.Orientation.Vertical)
        window.memory_panel.batch.setValue(req["batch"])
        window.memory_panel.depth_sweep.depths.setText(req["depths"])
        run_menu = next(a.menu() for a in window.menuBar().actions() if a.text().replace("&", "") == "Run")
        action = next(a for a in run_menu.actions() if a.text().replace("&", "") == "Memory vs Depth in Memory Tab")
        action.trigger()
        return window.memory_panel.depth_sweep.running
    if cmd == "state":
        sweep = window.memory_panel.depth_sweep
        tab = window.memory_tab.viewport()
        plot = sweep.plot
        top_left = plot.mapTo(tab, plot.rect().topLeft())
        inside = tab.rect().contains(top_left) and tab.rect().contains(plot.mapTo(tab, plot.rect().bottomRight()))
        box = plot.getPlotItem().legend
        legend = [label.text for _s, label in box.items] if box is not None and box.isVisible() else []
        return {"running": sweep.running, "message": sweep.message, "visible": plot.isVisible(),
                "size": [plot.width(), plot.height()], "inside": inside, "legend": legend,
                "tab": window.bottom.tabText(window.bottom.currentIndex()),
                "lines": len(plot.getPlotItem().listDataItems())}
    if cmd == "theme":  # View > Dark Theme: the plot follows the switch
        window.actions_by_name["dark_theme"].trigger()
        app.processEvents()
        return True
    if cmd == "shot":
        app.processEvents()
        return window.grab().save(req["path"])
    raise ValueError(cmd)

"""
CHILD += DRIVER_LOOP


def test_memory_vs_depth_from_the_run_menu_is_drawn_in_the_memory_tab(xvfb, tmp_path: Path) -> None:  # noqa: F811
    app = App(xvfb, "-", tmp_path / "home", CHILD, {"OMP_NUM_THREADS": "1"})
    try:
        time.sleep(1.0)  # first expose
        assert app.ask(cmd="example", name="revnet_coupling") == "revnet-coupling"
        time.sleep(1.0)
        assert app.ask(cmd="sweep", depths="1,2,4,8", batch=4, height=430) is True
        deadline = time.monotonic() + 240
        state = app.ask(cmd="state")
        while state["running"] and time.monotonic() < deadline:
            time.sleep(0.5)
            state = app.ask(cmd="state")
        assert not state["running"] and state["message"] == "", state
        time.sleep(0.5)
        app.shot("memory_vs_depth.png")  # taken before the checks: a failure can be looked at
        assert state["tab"] == "Memory" and state["visible"] and state["inside"], state
        assert state["size"][0] >= 400 and state["size"][1] >= 180, state
        assert state["lines"] == 6  # measured and estimate per mode
        assert [t.split(" ")[0] for t in state["legend"][:3]] == ["standard", "checkpoint", "reversible"]
        assert all(t.endswith("/block") for t in state["legend"][:3]), state["legend"]
        assert app.ask(cmd="theme")
        time.sleep(0.5)
        light = SCREENSHOTS / "memory_vs_depth_light.png"
        assert app.ask(cmd="shot", path=str(light))
        assert app.ask(cmd="state")["legend"] == state["legend"]
    finally:
        app.close()
