"""After a rewire inside a lane, fitted far out, the canvas shows what a repaint from scratch shows.

A rewire repaints only the band its changes dirty (the returning backdrop, the cards whose count line
came back, the wire); every other card and wire is blitted from its cached pixmap. What is on screen
(the window's backing store, painted piece by piece) is compared with the same view after every item
is redrawn anew, for random wires of the lanes."""
from __future__ import annotations

import random

from PySide6.QtGui import QImage

from revstudio.core.commands import Connect, Disconnect
from revstudio.core.generate import large_graph


def _on_screen(window, view) -> QImage:
    """What the window's backing store holds of the canvas (no repaint: what the updates left there)."""
    shot = window.windowHandle().screen().grabWindow(window.winId()).toImage()
    viewport = view.viewport()
    corner = viewport.mapTo(window, viewport.rect().topLeft())
    ratio = shot.devicePixelRatio()
    return shot.copy(int(corner.x() * ratio), int(corner.y() * ratio), int(viewport.width() * ratio),
                     int(viewport.height() * ratio))


def _from_scratch(window, view) -> QImage:
    """The canvas once every item's cached pixmap is dropped and the whole view painted again."""
    scene = view.scene()
    for item in scene.items():
        mode = item.cacheMode()
        item.setCacheMode(item.CacheMode.NoCache)  # (drops the item's pixmaps)
        item.setCacheMode(mode)
    view.resetCachedContent()
    view.viewport().repaint()
    return _on_screen(window, view)


def test_random_rewires_in_a_fitted_lane_paint_what_a_full_repaint_paints(make_window, settle) -> None:
    w = make_window(large_graph(300))
    view, doc = w.current_view(), w.document
    view.fit_all()
    settle()
    view.viewport().repaint()
    assert view.zoom() < 0.05 and view.scene().region_items  # far out, the lanes' backdrops drawn
    inside = [e for e in doc.graph.edges if e.dst.node.startswith("l") and "_relu" in e.dst.node]
    assert len(inside) > 20
    for edge in random.Random(7).sample(inside, 3):
        for step in (lambda e=edge: doc.push(Disconnect(doc.graph, e)),
                     lambda e=edge: doc.push(Connect(doc.graph, e.src, e.dst))):
            step()
            settle()
            shown = _on_screen(w, view)
            assert not shown.isNull() and shown.width() > 100
            assert shown == _from_scratch(w, view), edge
