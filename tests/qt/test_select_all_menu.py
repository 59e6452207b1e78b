"""Edit > Select All selects every node where the view is: it scrolled a graph too wide for the canvas
to its middle (the canvas's own Ctrl+A never did), so a user lost their place."""
from __future__ import annotations

from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def test_edit_select_all_keeps_the_view_where_it_is(make_window: Any, qtbot: Any) -> None:
    window = make_window()
    window.resize(1600, 1000)
    qtbot.wait(100)
    assert window.files.load_path(str(EXAMPLES / "revnet_wired.revs")) is not False
    qtbot.wait(200)
    view = window.current_view()
    assert not view.mapToScene(view.viewport().rect()).boundingRect().contains(view.scene().nodes_rect())
    zoom, centre = view.zoom(), view.mapToScene(view.viewport().rect().center())
    window.actions_by_name["select_all"].trigger()
    assert sorted(view.selected_node_ids()) == sorted(window.document.graph.nodes)
    assert view.zoom() == zoom and view.mapToScene(view.viewport().rect().center()) == centre
