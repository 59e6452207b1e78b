"""A rubber band tests wires' hit shapes on every mouse move: each wire strokes its shape
once (again only when an end moves), and the band still selects exactly the wires it did."""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QPainterPath, QPainterPathStroker
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from revstudio.core.commands import Move
from revstudio.core.generate import large_graph
from revstudio.qt.canvas import GraphView, wire_item

LEFT = Qt.MouseButton.LeftButton
NONE = Qt.KeyboardModifier.NoModifier


class CountingStroker(QPainterPathStroker):
    calls = 0

    def createStroke(self, path: QPainterPath) -> QPainterPath:  # noqa: N802 - Qt API
        CountingStroker.calls += 1
        return super().createStroke(path)


def _band(view: GraphView, start: QPoint, end: QPoint, steps: int) -> None:
    vp = view.viewport()
    QTest.mousePress(vp, LEFT, NONE, start)
    for i in range(1, steps + 1):
        QTest.mouseMove(vp, start + (end - start) * (i / steps))
        QApplication.processEvents()
    QTest.mouseRelease(vp, LEFT, NONE, end)


def _crossed(view: GraphView, start: QPoint, end: QPoint) -> set[Any]:
    """The wires whose freshly stroked shape meets the band's rectangle (Qt's own test, by hand)."""
    band = QPainterPath()
    band.addPolygon(view.mapToScene(QRect(start, end).normalized()))
    out = set()
    for edge, wire in view.scene().wire_items.items():
        stroker = QPainterPathStroker()
        stroker.setWidth(10.0)
        shape = wire.mapToScene(stroker.createStroke(wire.path()))
        if wire.label:
            shape.addPolygon(wire.mapToScene(wire._label_rect))
        if shape.intersects(band):
            out.add(edge)
    return out


def test_a_band_strokes_each_wire_once_and_selects_the_same_wires(shown_view: Any, monkeypatch: Any) -> None:
    view = shown_view(large_graph(200))
    QApplication.processEvents()
    monkeypatch.setattr(wire_item, "QPainterPathStroker", CountingStroker)
    CountingStroker.calls = 0
    start, end = QPoint(2, 2), QPoint(520, 380)
    assert view.itemAt(start) is None
    _band(view, start, end, 12)
    wires = len(view.scene().wire_items)
    # before: every move re-stroked every wire the band reached (thousands of calls here)
    # Qt strokes the wires the band's edge crosses, on each move: each once is enough
    assert 0 < CountingStroker.calls <= wires, f"{CountingStroker.calls} strokes for {wires} wires"
    CountingStroker.calls = 0
    _band(view, start, end, 12)
    assert CountingStroker.calls == 0, f"the same band again stroked {CountingStroker.calls} wires' shapes"
    selected = {i.edge for i in view.scene().selectedItems() if isinstance(i, wire_item.WireItem)}
    assert selected and selected == _crossed(view, start, end)


def test_a_wire_s_shape_follows_a_moved_end(shown_view: Any) -> None:
    view = shown_view(large_graph(20))
    doc = view.document
    scene = view.scene()
    edge, wire = next(iter(scene.wire_items.items()))
    old_mid = wire.scene_path().pointAtPercent(0.5)
    assert wire in scene.items(old_mid)  # the (now cached) shape answers a hit on the curve
    node = doc.graph.node(edge.dst.node)
    doc.push(Move(doc.graph, {edge.dst.node: (node.pos[0], node.pos[1] + 400)}))
    scene.flush_moves()
    QApplication.processEvents()
    new_mid = wire.scene_path().pointAtPercent(0.5)
    assert abs(new_mid.y() - old_mid.y()) > 100
    assert wire in scene.items(new_mid) and wire not in scene.items(old_mid)
