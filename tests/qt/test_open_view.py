"""A wide project opens readable, on its Input, with an overview of the rest.

Opened at 1600x1000, revnet_wired was fitted at zoom 0.17: its cards' titles were cut to
"Inp.", "Spl." and nothing could be read or clicked before zooming in.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from revstudio.qt.canvas.node_item import FAR
from revstudio.qt.canvas.view_zoom import OPEN_ZOOM
from revstudio.qt.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def _open(make_window: Any, qtbot: Any, path: Path) -> Any:
    window = make_window()
    window.resize(1600, 1000)
    qtbot.wait(200)
    assert window.files.load_path(str(path)) is not False
    qtbot.wait(200)  # the first view waits for the tab's size
    overview = window.current_view().overview
    qtbot.waitUntil(lambda: not overview.pending(), timeout=3000)  # the map is drawn once edits pause
    return window


def _shown(view: Any) -> Any:
    return view.mapToScene(view.viewport().rect()).boundingRect()


def _inputs(view: Any) -> list[Any]:
    return [i for n, i in view.scene().node_items.items() if view.graph.nodes[n].type == "Input"]


def test_a_wide_example_opens_readable_on_its_input(make_window: Any, qtbot: Any) -> None:
    view = _open(make_window, qtbot, EXAMPLES / "revnet_wired.revs").current_view()
    assert view.zoom() >= OPEN_ZOOM - 1e-6 > FAR  # the cards draw their readable titles and ports
    inputs = _inputs(view)
    assert inputs and all(_shown(view).contains(i.sceneBoundingRect()) for i in inputs)
    assert view.overview.isVisible()  # the rest of the graph: on the map


def test_fit_all_still_fits_everything(make_window: Any, qtbot: Any) -> None:
    window = _open(make_window, qtbot, EXAMPLES / "revnet_wired.revs")
    view = window.current_view()
    window.actions_by_name["fit"].trigger()
    assert view.zoom() < OPEN_ZOOM
    assert all(_shown(view).contains(i.sceneBoundingRect()) for i in view.scene().node_items.values())
    QApplication.processEvents()
    assert not view.overview.isVisible()  # everything is in view: no map needed


def test_a_saved_view_is_kept(make_window: Any, qtbot: Any, tmp_path: Path) -> None:
    data = json.loads((EXAMPLES / "revnet_wired.revs").read_text())
    data["view"] = {"zoom": 0.25, "x": 900.0, "y": 120.0}
    path = tmp_path / "saved.revs"
    path.write_text(json.dumps(data))
    view = _open(make_window, qtbot, path).current_view()
    centre = view.mapToScene(view.viewport().rect().center())
    assert abs(view.zoom() - 0.25) < 1e-3
    assert abs(centre.x() - 900) < 5 and abs(centre.y() - 120) < 5


def test_clicking_the_overview_centres_the_canvas_there(make_window: Any, qtbot: Any) -> None:
    view = _open(make_window, qtbot, EXAMPLES / "revnet_wired.revs").current_view()
    overview = view.overview
    spot = QPoint(overview.width() * 3 // 4, overview.height() // 2)
    target = overview.to_scene(QPointF(spot))
    before = view.mapToScene(view.viewport().rect().center())
    qtbot.mouseClick(overview, Qt.MouseButton.LeftButton, pos=spot)
    centre = view.mapToScene(view.viewport().rect().center())
    assert abs(centre.x() - before.x()) > 500  # it moved ...
    assert abs(centre.x() - target.x()) < 3 and abs(centre.y() - target.y()) < 3  # ... to the click


def test_the_overview_toggle_is_remembered(make_window: Any, qtbot: Any) -> None:
    window = _open(make_window, qtbot, EXAMPLES / "revnet_wired.revs")
    action = window.actions_by_name["overview"]
    assert action.isChecked() and window.current_view().overview.isVisible()
    action.trigger()
    assert not action.isChecked() and not window.current_view().overview.isVisible()
    assert Settings().overview is False
    again = _open(make_window, qtbot, EXAMPLES / "revnet_wired.revs")
    assert not again.actions_by_name["overview"].isChecked()
    assert not again.current_view().overview.isVisible()


def test_the_overview_follows_an_added_node(make_window: Any, qtbot: Any) -> None:
    view = _open(make_window, qtbot, EXAMPLES / "revnet_wired.revs").current_view()
    overview = view.overview
    far = overview._world.right() + 3000
    view.add_node_at("Activation", QPointF(far, 0))
    qtbot.waitUntil(lambda: overview._world.right() > far, timeout=2000)
    node = next(i for n, i in view.scene().node_items.items() if i.pos().x() >= far - 200)
    spot = overview.to_map(node.sceneBoundingRect().center()).toPoint()
    assert overview.rect().contains(spot)
    image = overview.grab().toImage()
    ratio = overview.devicePixelRatioF()
    theme = view.scene().theme
    card = theme.category_color(node.display.category)
    # the card is a pixel or two wide on the map: the pixel nearest its colour around its centre
    colour = min((image.pixelColor((spot + QPoint(dx, dy)) * ratio) for dx in (-1, 0, 1) for dy in (-1, 0, 1)),
                 key=lambda c: _far(c, card))
    assert _far(colour, card) < _far(colour, theme.background)


def _far(a: QColor, b: QColor) -> int:
    return abs(a.red() - b.red()) + abs(a.green() - b.green()) + abs(a.blue() - b.blue())


def test_the_overview_follows_the_theme(make_window: Any, qtbot: Any) -> None:
    window = _open(make_window, qtbot, EXAMPLES / "revnet_wired.revs")
    overview = window.current_view().overview

    def corner() -> QColor:
        return overview.grab().toImage().pixelColor(3, 3)

    dark = corner()
    # by what the canvas shows (the window's theme setting is the app's, which other tests may leave)
    window.set_theme("light" if window.current_view().scene().theme.dark else "dark")
    assert corner().lightness() != dark.lightness()


def test_each_tab_has_its_own_overview_and_a_hidden_one_catches_up(make_window: Any, qtbot: Any) -> None:
    window = _open(make_window, qtbot, EXAMPLES / "glow_flow.revs")
    main = window.tabs.main_view()
    group = next(iter(window.document.graph.groups))
    assert window.tabs.open_group(group)
    body = window.current_view()
    assert body is not main
    qtbot.waitUntil(lambda: not body.overview.pending(), timeout=3000)
    inner = body.scene().nodes_rect()
    assert body.overview._world.contains(inner) and not body.overview._world.contains(main.scene().nodes_rect())
    drawn = main.overview.redraws
    far = main.overview._world.right() + 2000
    main.add_node_at("Activation", QPointF(far, 0))  # an edit on the tab behind: no redraw for nothing
    qtbot.wait(400)
    assert main.overview.redraws == drawn
    window.tabs.setCurrentWidget(main)
    qtbot.waitUntil(lambda: main.overview._world.right() > far, timeout=3000)
