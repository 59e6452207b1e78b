"""Far out, wires are painted from a pixmap per view, as cards are: an edit that ends a lane's
region repaints the lane's box, and each wire in it was painted anew (a Python call each). Nearer
they are painted directly. What the canvas shows stays what a direct paint shows, far out and
zoomed in, before and after the edit."""
from __future__ import annotations

import pytest
from PySide6.QtGui import QImage

from revstudio.core.commands import Disconnect, Move, SetParam
from revstudio.core.generate import large_graph
from revstudio.qt.canvas import wire_item
from revstudio.qt.canvas.wire_item import WireItem


def _grab(view, settle) -> QImage:
    settle()
    return view.viewport().grab().toImage()


def _direct(view, settle) -> QImage:
    """The viewport as painted with every wire drawn directly (no pixmaps), then back (the
    pixmaps made anew by a paint, so that what the next edit leaves in them is what is shown)."""
    scene = view.scene()
    wires = list(scene.wire_items.values())
    for wire in wires:
        wire.set_cached(False)
    image = _grab(view, settle)
    for wire in wires:
        wire.set_cached(scene.wires_cached)
    _grab(view, settle)
    return image


def _worst(a: QImage, b: QImage) -> int:
    """The largest difference of one colour channel between the two images, leaving out the
    focus frame's corners (drawn over the edges of whatever part is repainted)."""
    w, h = a.width(), a.height()
    worst = 0
    for y in range(0, h):
        for x in range(0, w):
            if (x in (0, w - 1)) and (y in (0, h - 1)):
                continue
            p, q = a.pixel(x, y), b.pixel(x, y)
            if p != q:
                worst = max(worst, *(abs((p >> s & 255) - (q >> s & 255)) for s in (0, 8, 16, 24)))
    return worst


@pytest.fixture
def lane_view(make_window, settle):
    w = make_window(large_graph(300))
    view = w.current_view()
    view.resize(420, 260)
    settle()
    return w, view


def test_an_unwire_far_out_paints_the_wires_it_changed_not_every_wire_of_the_lane(make_window, settle, monkeypatch):
    painted: list[WireItem] = []
    paint = WireItem.paint

    def counted(self, painter, option, widget=None):
        painted.append(self)
        return paint(self, painter, option, widget)

    monkeypatch.setattr(wire_item.WireItem, "paint", counted)  # (before the items: PySide keeps
    # the override it finds when an item is made)
    w = make_window(large_graph(300))
    doc, view = w.document, w.current_view()
    scene = view.scene()
    view.fit_all()
    settle()
    view.viewport().repaint()
    assert painted  # the wires are painted at this zoom, once
    painted.clear()
    wire = next(e for e in doc.graph.edges if e.dst.node == "l0b0_f_relu")
    doc.push(Disconnect(doc.graph, wire))
    doc.current_report()
    settle()
    view.viewport().repaint()
    # the lane's backdrop went and its cards lost their counts: the whole lane was repainted, and
    # every one of its ~390 wires painted anew; now only wires whose look changed (none here:
    # far out, the shape labels that went are not drawn) are
    assert len(scene.wire_items) > 300 and len(painted) <= 5, len(painted)
    assert not any(set(r.node_ids) & {"l0b0_f_relu"} for r in scene.region_items)


@pytest.mark.parametrize("zoom", ["fit", 0.3, 1.0])
def test_wires_from_pixmaps_look_as_painted_directly_after_an_unwire_far_out(lane_view, settle, zoom):
    w, view = lane_view
    doc, scene = w.document, view.scene()
    view.fit_all()
    settle()
    wire = next(e for e in doc.graph.edges if e.dst.node == "l0b0_f_relu")
    doc.push(Disconnect(doc.graph, wire))  # far out: the shape labels that go are not drawn
    doc.current_report()
    settle()
    if zoom != "fit":  # zoomed in where the labels are drawn: the ones the unwire took are gone
        view.resetTransform()
        view.scale(zoom, zoom)
        view.centerOn(scene.node_items["l0b0_f_relu"].pos())
    _grab(view, settle)  # (the zoom is seen as it is painted: the wires follow it just after)
    settle()
    assert scene.wires_cached == (zoom != 1.0)  # from pixmaps far out (cards are blocks there)
    assert all(w.cacheMode() == (WireItem.CacheMode.DeviceCoordinateCache if scene.wires_cached
                                 else WireItem.CacheMode.NoCache) for w in scene.wire_items.values())
    cached = _grab(view, settle)
    assert _worst(cached, _direct(view, settle)) <= 3  # (antialiasing rounds a level or two apart)
    if zoom == 0.3:  # curves reshaped by moves, from pixmaps
        x, y = doc.graph.nodes["l0b0_f_relu"].pos
        for dy in (60, -60):  # (the second curve mirrors the first: a box of the same size)
            doc.push(Move(doc.graph, {"l0b0_f_relu": (x, y + dy)}))
            assert _worst(_grab(view, settle), _direct(view, settle)) <= 3, dy
    if zoom == 1.0:
        doc.undo_stack.undo()  # zoomed in: the labels come back, drawn
        doc.current_report()
        assert all(w.label for w in scene.wire_items.values() if w.edge.src.node == "l0b0_f_relu")
        assert _worst(_grab(view, settle), _direct(view, settle)) <= 3
        # labels of the same width ("4x8x8" -> "4x8x9")
        labelled = scene.wire_items[next(e for e in doc.graph.edges if e.src.node == "l0b0_split")]
        view.centerOn(labelled.sceneBoundingRect().center())  # (its label fits: drawn)
        cached = _grab(view, settle)
        assert labelled.label == "4x8x8" and _worst(cached, _direct(view, settle)) <= 3
        doc.push(SetParam(doc.graph, "x", "shape", [8, 8, 9]))
        doc.current_report()
        assert labelled.label == "4x8x9"
        assert _worst(_grab(view, settle), _direct(view, settle)) <= 3
        view.fit_all()  # out again: from pixmaps
        _grab(view, settle)
        settle()
        assert scene.wires_cached and _worst(_grab(view, settle), _direct(view, settle)) <= 3
