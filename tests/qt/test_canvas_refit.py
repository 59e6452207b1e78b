"""A project opened before the window's first paint is fitted again once the canvas has its
final size, unless the user zoomed or panned first."""
from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from revstudio.core.generate import revnet_chain
from revstudio.qt.canvas import GraphView
from revstudio.qt.document import Document


def _view(qtbot: Any) -> GraphView:
    doc = Document(revnet_chain(6))
    view = GraphView(doc)
    qtbot.addWidget(view)
    view.resize(500, 300)  # the size it has while the window's docks settle
    view.show()
    QApplication.processEvents()
    view.fit_by_itself()  # as a group's tab opens: everything (a project opens readable, test_open_view.py)
    return view


def test_a_fit_made_before_the_view_settled_is_redone_at_the_final_size(qtbot: Any) -> None:
    view = _view(qtbot)
    early = view.zoom()
    view.resize(1100, 700)
    QApplication.processEvents()
    assert view.zoom() > early * 1.2
    assert view.zoom() == pytest.approx(min(view._fit_zoom(), 1.25), rel=0.02)
    view.document.undo_stack.clear()


def _pan(view: Any) -> None:
    bar = view.horizontalScrollBar()
    bar.setValue(bar.value() + 60)  # what a middle-button drag does


@pytest.mark.parametrize("touch", [lambda view: view.zoom_in(), _pan], ids=["zoomed", "panned"])
def test_no_refit_once_the_user_zoomed_or_panned(qtbot: Any, touch: Any) -> None:
    view = _view(qtbot)
    touch(view)
    zoom = view.zoom()
    view.resize(1100, 700)
    QApplication.processEvents()
    assert view.zoom() == zoom
    view.document.undo_stack.clear()


def test_a_saved_view_is_kept_through_resizes(qtbot: Any) -> None:
    view = _view(qtbot)
    view.restore_view_state({"zoom": 0.3, "x": 100.0, "y": 50.0})
    view.resize(1100, 700)
    QApplication.processEvents()
    assert view.zoom() == pytest.approx(0.3)
    centre = view.mapToScene(view.viewport().rect().center())
    assert abs(centre.x() - 100) < 5 and abs(centre.y() - 50) < 5
    view.document.undo_stack.clear()


def test_a_project_opened_before_the_first_paint_fills_the_canvas(qtbot: Any, tmp_path: Any, dialogs: Any) -> None:
    from pathlib import Path

    from PySide6.QtTest import QTest

    from revstudio.qt.autosave import RecoveryStore
    from revstudio.qt.main_window import MainWindow
    from revstudio.qt.settings import Settings

    example = Path(__file__).resolve().parents[2] / "resources" / "examples" / "birnn_sequence.revs"
    window = MainWindow(Document(), Settings(), dialogs, RecoveryStore(tmp_path / "recovery"))
    qtbot.addWidget(window)
    window.resize(1280, 800)
    assert window.files.load_path(str(example)) is not False
    QApplication.processEvents()  # the first fit, while the window is not laid out yet
    window.show()
    qtbot.waitExposed(window)
    QTest.qWait(50)
    view = window.current_view()
    # before: fitted at 0.175 where 0.198 fits; now no further out than OPEN_ZOOM, on its Input
    from revstudio.qt.canvas.view_zoom import OPEN_ZOOM

    fit = min(view._fit_zoom(), 1.25)
    assert view.zoom() == pytest.approx(fit if fit >= OPEN_ZOOM else OPEN_ZOOM, rel=0.03)
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    assert seen.contains(view.scene().nodes_rect(["sequence"]))  # its Input


@pytest.mark.parametrize("pick", ["first", "last", "all"])
def test_selecting_nodes_already_in_view_leaves_the_fit_to_follow_a_shrink(qtbot: Any, pick: str) -> None:
    """Nodes selected by a right-click, Group Selection or Ungroup that the fit already showed scrolled
    the canvas a few pixels towards them: the view counted as panned and, once the window was
    made smaller, kept its zoom with part of the graph off screen."""
    view = _view(qtbot)
    view.resize(1100, 700)
    QApplication.processEvents()
    ids = list(view.scene().node_items)
    chosen = {"first": ids[:1], "last": ids[-1:], "all": ids}[pick]
    zoom, centre = view.zoom(), view.mapToScene(view.viewport().rect().center())
    view.select_nodes(chosen)
    assert view.zoom() == zoom and view.mapToScene(view.viewport().rect().center()) == centre  # no jiggle
    view.resize(700, 450)
    QApplication.processEvents()
    assert view.zoom() < zoom
    assert view.mapToScene(view.viewport().rect()).boundingRect().contains(view.scene().nodes_rect())
    view.document.undo_stack.clear()


def test_selecting_a_node_out_of_view_still_scrolls_to_it(qtbot: Any) -> None:
    view = _view(qtbot)
    view.resize(1100, 700)
    view.resetTransform()  # actual size: most of the chain is off screen
    view.centerOn(0, 0)
    QApplication.processEvents()
    far = max(view.scene().node_items.values(), key=lambda item: item.pos().x())
    view.select_nodes([far.node_id])
    assert view.mapToScene(view.viewport().rect()).boundingRect().contains(far.sceneBoundingRect())
    view.document.undo_stack.clear()


def test_a_project_opened_fitted_refits_by_the_opening_rules_as_the_window_shrinks_and_grows(
        make_window: Any, qtbot: Any) -> None:
    """Fitted down to OPEN_ZOOM, else OPEN_ZOOM on its Inputs: the same on each resize until touched."""
    from pathlib import Path

    from revstudio.qt.canvas.view_zoom import OPEN_ZOOM

    example = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_coupling.revs"
    window = make_window()
    window.resize(1600, 1000)
    qtbot.wait(100)
    assert window.files.load_path(str(example)) is not False
    qtbot.wait(200)
    view = window.current_view()

    def seen() -> Any:
        return view.mapToScene(view.viewport().rect()).boundingRect()

    opened = view.zoom()
    assert opened >= OPEN_ZOOM and seen().contains(view.scene().nodes_rect())  # it fits at this size
    window.resize(1000, 700)
    qtbot.wait(100)
    assert view.zoom() == pytest.approx(OPEN_ZOOM)  # no longer fits readable: 70 % on its Inputs
    inputs = [i.sceneBoundingRect() for n, i in view.scene().node_items.items() if view.graph.nodes[n].type == "Input"]
    assert inputs and all(seen().contains(r) for r in inputs)
    window.resize(1600, 1000)
    qtbot.wait(100)
    assert view.zoom() == pytest.approx(opened, rel=0.01) and seen().contains(view.scene().nodes_rect())
