"""Cards' and wires' bounds are held by Qt, and far out a wire's bounds leave its label out.

A rewire or an undo of a delete inside a lane brings its backdrop back, which repaints every card
and wire of the lane's band; Qt asked each of those ~2,300 items for its bounds several times, a
call into Python each. And far out, where no label is drawn, the ~650 labels such an edit brings
back each changed its wire's geometry (bounds that held the label). What the canvas shows and hits
stays what a scene drawn from scratch at the same zoom shows."""
from __future__ import annotations

import sys

import pytest

from revstudio.core.commands import Connect, Disconnect
from revstudio.core.generate import large_graph
from revstudio.qt.canvas.scene import GraphScene


def _python_calls(name: str, fn) -> int:
    """How many calls into a card's or a wire's Python method ``name`` ``fn`` made (Qt's too)."""
    from revstudio.qt.canvas.node_item import NodeItem
    from revstudio.qt.canvas.wire_item import WireItem

    calls = [0]

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == name \
                and isinstance(frame.f_locals.get("self"), (NodeItem, WireItem)):
            calls[0] += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls[0]


@pytest.fixture
def fitted(make_window, settle):
    w = make_window(large_graph(300))
    view = w.current_view()
    view.fit_all()
    settle()
    view.viewport().repaint()
    return w, view


def test_a_repaint_of_every_card_and_wire_asks_python_for_no_bounds(fitted):
    w, view = fitted
    scene = view.scene()
    assert len(scene.node_items) > 250 and len(scene.wire_items) > 350
    # was ~6 calls per card and wire (4,600 for this 300-node project) on every full repaint
    assert _python_calls("boundingRect", view.viewport().repaint) == 0


def _bounds(scene) -> dict:
    return {edge: wire.boundingRect() for edge, wire in scene.wire_items.items()}


def test_far_out_a_rewire_changes_no_wire_geometry_but_its_own(fitted, settle):
    """Far out (no label drawn) the labels an unwire takes and its rewire brings back leave every
    wire's bounds as they were; each wire's bounds and hit area are a fresh scene's at that zoom."""
    w, view = fitted
    doc, scene = w.document, view.scene()
    assert not scene.labels_held
    wire = next(e for e in doc.graph.edges if e.dst.node == "l0b0_f_relu")
    unwire, rewire = lambda: doc.push(Disconnect(doc.graph, wire)), lambda: doc.push(Connect(doc.graph, wire.src, wire.dst))
    # (an unwire takes the lane's shapes away, a rewire brings them back; then its undo and redo)
    for step, shapes_gone in ((unwire, True), (rewire, False), (doc.undo_stack.undo, True), (doc.undo_stack.redo, False)):
        before = _bounds(scene)
        step()
        doc.current_report()
        settle()
        unlabelled = sum(1 for item in scene.wire_items.values() if not item.label)
        assert (unlabelled > 100) == shapes_gone, unlabelled
        after = _bounds(scene)
        changed = [edge for edge in after if edge in before and after[edge] != before[edge]]
        assert changed == []  # was every wire whose label went or came back (~190 here)
        _assert_as_fresh(scene, doc)
    _assert_as_fresh(scene, doc)


def _assert_as_fresh(scene, doc) -> None:
    fresh = GraphScene(doc)
    fresh.hold_labels(scene.labels_held)
    try:
        for edge, wire in scene.wire_items.items():
            anew = fresh.wire_items[edge]
            assert wire.label == anew.label and wire.boundingRect() == anew.boundingRect(), edge
            assert wire.shape().boundingRect() == anew.shape().boundingRect(), edge
        for node_id, card in scene.node_items.items():
            assert card.boundingRect() == fresh.node_items[node_id].boundingRect(), node_id
    finally:
        fresh.detach()


def test_zoomed_in_a_wire_holds_and_hits_its_label_and_lets_it_go_far_out(fitted, settle):
    w, view = fitted
    doc, scene = w.document, view.scene()
    # a wire whose label stands out of its curve's box (a level one: the label is taller)
    wire = next(item for item in scene.wire_items.values()
                if item.label and not item.boundingRect().contains(item._label_rect))
    view.resetTransform()  # 100 %: labels are drawn
    view.centerOn(wire.sceneBoundingRect().center())
    view.viewport().repaint()
    assert scene.labels_held and wire.boundingRect().contains(wire._label_rect)
    label_centre = wire.mapToScene(wire._label_rect.center())
    assert wire in scene.items(label_centre)  # a click on the label finds the wire
    _assert_as_fresh(scene, doc)
    view.fit_all()
    view.viewport().repaint()
    assert not scene.labels_held and not wire.boundingRect().contains(wire._label_rect)
    _assert_as_fresh(scene, doc)


def test_a_recheck_words_each_shape_once_and_parses_no_port(fitted, monkeypatch):
    """Every edit relabels every wire from the report: each wire's port was written out and parsed
    back, and its shape's text made anew (1,306 of each at 1,000 nodes); now once per distinct shape."""
    import revstudio.qt.canvas.display as display_module
    import revstudio.qt.canvas.scene as scene_module
    from revstudio.core.graph import PortRef

    w, view = fitted
    scene = view.scene()
    worded: list[object] = []
    parsed: list[str] = []
    fmt, parse = display_module.format_shape, PortRef.parse

    def counted_format(shape):
        worded.append(shape)
        return fmt(shape)

    def counted_parse(text):
        parsed.append(text)
        return parse(text)

    monkeypatch.setattr(display_module, "format_shape", counted_format)
    monkeypatch.setattr(scene_module, "format_shape", counted_format)
    monkeypatch.setattr(PortRef, "parse", staticmethod(counted_parse))
    labels = {edge: wire.label for edge, wire in scene.wire_items.items()}
    scene.apply_analysis()
    assert {edge: wire.label for edge, wire in scene.wire_items.items()} == labels
    assert len(scene.wire_items) > 350
    assert len(worded) == len(set(worded)) < 40 and parsed == []
