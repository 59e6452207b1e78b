"""Every canvas tab shows its whole graph until the user zooms or pans: a window built around a
loaded document fits like one that opened the file, and group and run tabs refit on a resize as
the main tab does (they fitted once, so a window made smaller cut their graph off)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QApplication

from revstudio.core.project import load
from revstudio.qt.document import Document

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def _shows_all(view: Any) -> bool:
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    return seen.contains(view.scene().nodes_rect())


def _first_view(view: Any) -> bool:
    """A project's first view: all of it, or (too wide to read so) its Inputs at OPEN_ZOOM."""
    from revstudio.qt.canvas.view_zoom import OPEN_ZOOM

    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    inputs = [n for n in view.graph.nodes if view.graph.nodes[n].type == "Input"]
    return _shows_all(view) or (abs(view.zoom() - OPEN_ZOOM) < 1e-6
                                and seen.contains(view.scene().nodes_rect(inputs)))


def _resize(window: Any, qtbot: Any, w: int, h: int) -> None:
    window.resize(w, h)
    qtbot.waitUntil(lambda: window.width() == w)
    for _ in range(3):
        QApplication.processEvents()


def test_a_window_built_on_a_loaded_document_shows_the_whole_graph(make_window: Any, qtbot: Any) -> None:
    graph = load(str(EXAMPLES / "digits_revnet.revs"))  # 6,000 px wide: at zoom 1 only its Input showed
    window = make_window(graph)
    QApplication.processEvents()
    view = window.tabs.main_view()
    assert _first_view(view)
    _resize(window, qtbot, 1000, 700)
    assert _first_view(view)


def test_a_group_tab_refits_on_resize_until_touched(make_window: Any, qtbot: Any, settle: Any) -> None:
    window = make_window(load(str(EXAMPLES / "revnet_wired.revs")))
    window.current_view().select_nodes(["block0_f_conv1", "block0_f_relu", "block0_f_conv2"])
    assert window.tabs.group_selection()
    assert window.tabs.open_group(window.current_view().selected_node_ids()[0])
    settle()
    view = window.current_view()
    assert view is not window.tabs.main_view() and _shows_all(view)
    zoom = view.zoom()
    _resize(window, qtbot, 900, 600)
    assert _shows_all(view) and view.zoom() < zoom
    view.zoom_in()  # the user's zoom stays
    zoom = view.zoom()
    _resize(window, qtbot, 1280, 800)
    assert view.zoom() == zoom


def test_a_read_only_tab_refits_on_resize(make_window: Any, qtbot: Any) -> None:
    window = make_window()
    doc = Document(load(str(EXAMPLES / "digits_revnet.revs")))
    view = window.tabs.add_read_only("run", doc, "run 1", "a run's snapshot")
    for _ in range(3):
        QApplication.processEvents()
    assert _shows_all(view)
    _resize(window, qtbot, 900, 600)
    assert _shows_all(view)
    doc.undo_stack.clear()
