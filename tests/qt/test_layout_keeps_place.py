"""Ctrl+L on a big graph keeps the selected nodes in view; the canvas menu fits the selection.

Laying out a 400-node project fitted the whole graph: at 2 % zoom the nodes were a thin line of
specks and the node being worked on was lost. A right-click offered Fit All but not Fit Selection (F).
"""
from __future__ import annotations

from revstudio.core.generate import large_graph


def test_auto_layout_keeps_the_selection_in_view_at_a_readable_zoom(make_window, settle):
    from revstudio.qt.canvas.view import READABLE_ZOOM

    window = make_window(large_graph(200))
    view = window.current_view()
    settle()
    target = "l0b12_f_relu"  # (a block in the middle)
    view.select_nodes([target])
    view.reveal_node(target)
    assert view.auto_layout(selection_only=False)
    settle()
    assert view.selected_node_ids() == [target]
    assert view.zoom() >= READABLE_ZOOM * 0.999
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert shown.contains(view.scene().node_items[target].sceneBoundingRect())


def test_auto_layout_with_nothing_selected_still_shows_the_whole_graph(make_window, settle):
    window = make_window(large_graph(60))
    view = window.current_view()
    view.scene().clearSelection()
    assert view.auto_layout(selection_only=False)
    settle()
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert shown.contains(view.scene().nodes_rect())


def test_the_canvas_menu_fits_the_selection(make_window, revnet, settle):
    window = make_window(revnet)
    view = window.current_view()
    menu, _ = view.build_context_menu(view.scene().node_items["f"].scenePos())
    fit = next(a for a in menu.actions() if a.text().startswith("Fit Selection"))
    assert not fit.isEnabled()  # nothing selected yet
    view.select_nodes(["f"])
    view.fit_all()
    before = view.zoom()
    menu, _ = view.build_context_menu(view.scene().node_items["f"].scenePos())
    fit = next(a for a in menu.actions() if a.text().startswith("Fit Selection"))
    assert fit.isEnabled()
    fit.trigger()
    assert view.zoom() != before
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert shown.contains(view.scene().node_items["f"].sceneBoundingRect())
