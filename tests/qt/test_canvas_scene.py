"""The canvas mirrors the document: items follow graph events and the derived report."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest

from revstudio.core.commands import AddNode, Connect, Move, SetParam, remove_nodes
from revstudio.core.generate import revnet_chain
from revstudio.core.graph import Graph, Node
from revstudio.qt.canvas import GraphView
from revstudio.qt.canvas.node_item import NodeItem
from revstudio.qt.document import Document


def small_revnet() -> Graph:
    """DESIGN section 2's wired RevNet block, laid out left to right."""
    g = Graph("tiny")
    g.add_node("Input", "x", {"shape": [8, 16, 16]}, (0, 0))
    g.add_node("Split", "s", {}, (250, 0))
    g.add_node("Conv", "f", {"out_channels": 4, "kernel_size": 3, "padding": "same"}, (500, 0))
    g.add_node("Merge", "m", {"mode": "add"}, (750, 0))
    g.add_node("Concat", "c", {}, (1000, 0))
    g.add_node("Output", "y", {}, (1250, 0))
    for a, b in [("x.out", "s.in"), ("s.out1", "f.in"), ("s.out0", "m.in0"), ("f.out", "m.in1"),
                 ("m.out", "c.in0"), ("s.out1", "c.in1"), ("c.out", "y.in")]:
        g.connect(a, b)
    return g


@pytest.fixture
def make_view(qtbot):
    """Views on fresh documents; their undo stacks are cleared at the end so that no
    clean-state signal fires while Qt tears the documents down."""
    docs: list[Document] = []

    def make(graph: Graph, body: str | None = None) -> GraphView:
        doc = Document(graph)
        docs.append(doc)
        v = GraphView(doc, graph.groups[body] if body else None)
        qtbot.addWidget(v)
        v.resize(900, 600)
        return v

    yield make
    for doc in docs:
        doc.undo_stack.clear()


@pytest.fixture
def view(make_view):
    return make_view(small_revnet())


def settle(view: GraphView) -> None:
    """Apply the coalesced analysis now instead of waiting for the event loop."""
    view.document.recompute()


def test_items_mirror_the_graph_and_follow_undo(view):
    scene, doc = view.scene(), view.document
    assert set(scene.node_items) == set(doc.graph.nodes)
    assert set(scene.wire_items) == set(doc.graph.edges)
    doc.push(AddNode(doc.graph, Node("a", "Activation", {}, (10, 300))))
    doc.push(Connect(doc.graph, "c.out", "a.in"))
    assert "a" in scene.node_items and len(scene.wire_items) == 8
    doc.push(remove_nodes(doc.graph, ["m"]))
    assert "m" not in scene.node_items
    assert not any("m" in (e.src.node, e.dst.node) for e in scene.wire_items)
    for _ in range(3):
        doc.undo_stack.undo()
    assert set(scene.node_items) == set(doc.graph.nodes)
    assert set(scene.wire_items) == set(doc.graph.edges)


def test_wires_carry_live_shapes_and_set_param_updates_them(view):
    scene, doc = view.scene(), view.document
    wire = scene.wire_items[next(e for e in doc.graph.edges if str(e.src) == "f.out")]
    assert wire.label == "4x16x16"
    doc.push(SetParam(doc.graph, "x", "shape", [8, 10, 12]))
    settle(view)
    assert wire.label == "4x10x12"
    assert scene.wire_items[next(e for e in doc.graph.edges if str(e.src) == "x.out")].label == "8x10x12"
    doc.undo_stack.undo()
    settle(view)
    assert wire.label == "4x16x16"


def test_param_change_that_adds_ports_grows_the_node(view):
    scene, doc = view.scene(), view.document
    item = scene.node_items["c"]
    before = item.height
    doc.push(SetParam(doc.graph, "c", "inputs", 3))
    assert item.display.inputs == ("in0", "in1", "in2")
    assert item.height > before
    settle(view)
    assert any("in2" in msg for msg in item.errors)  # the new input is unconnected


def test_error_outline_and_tooltip_name_the_problem(view):
    scene, doc = view.scene(), view.document
    doc.push(SetParam(doc.graph, "m", "mode", "add"))
    # Feed the merge two different shapes: the input (8 channels) and the conv (4 channels).
    doc.push(Disconnect_into(doc.graph, "m", "in0"))
    doc.push(Connect(doc.graph, "x.out", "m.in0"))
    settle(view)
    item = scene.node_items["m"]
    assert item.errors, "the merge of unequal shapes must be flagged on the merge node"
    assert "error" in item.toolTip() and "m" in item.toolTip()
    ok = scene.node_items["f"]
    assert not ok.errors and "error" not in ok.toolTip()
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    settle(view)
    assert not item.errors


def Disconnect_into(graph, node, port):  # noqa: N802 - reads like a command
    from revstudio.core.commands import Disconnect
    return Disconnect(graph, graph.edges_into(node, port)[0])


def test_region_backdrop_for_a_revnet_labelled_with_savings(make_view):
    v = make_view(revnet_chain(4, channels=4, size=8))
    doc = v.document
    scene = v.scene()
    regions = doc.report.regions
    assert regions, "the backend should find a reversible region in a RevNet"
    assert len(scene.region_items) == len(regions)
    item = scene.region_items[0]
    assert item.label.startswith("reversible") and "saves" in item.label
    # the backdrop covers every node of its region and sits behind them
    for node_id in item.node_ids:
        assert item.boundingRect().contains(scene.node_items[node_id].sceneBoundingRect())
    assert item.zValue() < scene.node_items[item.node_ids[0]].zValue()


def test_region_backdrop_and_wires_follow_a_dragged_member(view):
    view.show()
    scene = view.scene()
    region = scene.region_items[0]
    member = scene.node_items["m"]
    assert "m" in region.node_ids
    wire = scene.wire_items[next(e for e in view.document.graph.edges if str(e.src) == "m.out")]
    view.centerOn(member.sceneBoundingRect().center())
    start = view.mapFromScene(member.mapToScene(QPointF(90, 10)))
    vp = view.viewport()
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for step in range(1, 5):
        QTest.mouseMove(vp, start + type(start)(0, 40 * step))
        # while dragging, before any command: the backdrop and the wire follow
        assert region.boundingRect().contains(member.sceneBoundingRect())
        assert wire.scene_path().pointAtPercent(0.0) == member.port_scene_pos("out", True)
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start + type(start)(0, 160))
    view.document.recompute()
    assert region not in scene.region_items or region.boundingRect().contains(member.sceneBoundingRect())
    assert scene.region_items[0].boundingRect().contains(member.sceneBoundingRect())


def test_repeat_node_shows_memory_growth(make_view):
    v = make_view(revnet_chain(3, channels=4, size=8, wired=False))
    doc = v.document
    item = v.scene().node_items["blocks"]
    in_region = any("blocks" in r.nodes for r in doc.report.regions)
    expected = "flat (reversible)" if in_region else "linear"
    assert any(expected in line for line in item.display.footer)


def test_node_drag_is_one_move_command_on_release(view):
    view.show()
    qtbot_wait_exposed(view)
    scene, doc = view.scene(), view.document
    item = scene.node_items["f"]
    start = view.mapFromScene(item.mapToScene(QPointF(90, 10)))  # on the header
    count = doc.undo_stack.count()
    QTest.mousePress(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for step in range(1, 6):
        QTest.mouseMove(view.viewport(), start + type(start)(step * 10, step * 6))
    assert doc.undo_stack.count() == count  # previewing only
    assert item.pos() != QPointF(500, 0)
    QTest.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                       start + type(start)(50, 30))
    assert doc.undo_stack.count() == count + 1
    moved = doc.graph.node("f").pos
    assert moved != (500.0, 0.0) and moved == (item.pos().x(), item.pos().y())
    doc.undo_stack.undo()
    assert doc.graph.node("f").pos == (500.0, 0.0) and item.pos() == QPointF(500, 0)


def qtbot_wait_exposed(view):
    from PySide6.QtWidgets import QApplication
    QApplication.processEvents()
    view.centerOn(600, 50)


def test_moves_from_the_model_move_items_and_wires(view):
    scene, doc = view.scene(), view.document
    wire = scene.wire_items[next(e for e in doc.graph.edges if str(e.dst) == "f.in")]
    before = wire.scene_path().pointAtPercent(1.0)
    doc.push(Move(doc.graph, {"f": (520, 100)}))
    assert scene.node_items["f"].pos() == QPointF(520, 100)
    assert wire.scene_path().pointAtPercent(1.0) == before + QPointF(20, 100)


def test_theme_switch_and_group_body_scene(make_view):
    v = make_view(revnet_chain(2, channels=4, size=8, wired=False), body="block")
    doc = v.document
    body = doc.graph.groups["block"]
    assert set(v.scene().node_items) == set(body.nodes)
    # shapes inside the body, as the project's report saw them at the group's first use
    labels = [w.label for w in v.scene().wire_items.values()]
    assert labels and all(labels), labels
    v.set_theme(False)
    assert not v.scene().theme.dark
    n = len(body.nodes)
    v.add_node_at("Activation", QPointF(0, 300))
    assert len(body.nodes) == n + 1 and len(v.scene().node_items) == n + 1
    doc.undo_stack.undo()
    assert len(v.scene().node_items) == n


def test_replacing_the_document_graph_rebuilds(view):
    scene = view.scene()
    view.document.replace_graph(revnet_chain(1, channels=4, size=8))
    assert set(scene.node_items) == set(view.document.graph.nodes)
    assert not any(isinstance(i, NodeItem) and i.node_id == "s" for i in scene.items())


def test_a_deleted_view_stops_observing_the_graph(qtbot):
    doc = Document(small_revnet())
    graph = doc.graph
    view = GraphView(doc)  # not given to qtbot: it is deleted here, as canvas tabs do
    assert len(graph.node_added) == 1
    view.deleteLater()
    qtbot.waitUntil(lambda: len(graph.node_added) == 0, timeout=30_000)
    graph.add_node("Activation", "late", {}, (0, 0))  # nothing dangling reacts to it
    doc.recompute()  # nor to the analysis signal


def test_center_on_node(view):
    assert view.center_on_node("y")
    centre = view.mapToScene(view.viewport().rect().center())
    assert view.scene().node_items["y"].sceneBoundingRect().contains(centre)
    assert not view.center_on_node("nope")


def test_port_tooltips_say_what_flows_through(view):
    scene = view.scene()
    item = scene.node_items["f"]
    item.set_hover_port(("out", True))
    assert "f.out" in item.toolTip() and "4x16x16" in item.toolTip() and "m.in1" in item.toolTip()
    item.set_hover_port(("in", False))
    assert "fed by s.out1" in item.toolTip()
    item.set_hover_port(None)
    assert item.toolTip().startswith("<b>Conv</b>")


def test_files_with_unknown_types_and_ports_are_shown_with_their_errors(make_view):
    g = Graph("odd")
    g.add_node("Input", "x", {"shape": [4, 8]}, (0, 0))
    g.add_node("Wobble", "w", {}, (250, 0))              # no such type
    g.add_node("Split", "s", {"sections": "many"}, (500, 0))  # a value the spec refuses
    g.connect("x.out", "w.in")
    g.connect("x.out", "s.nope")                          # no such port
    view = make_view(g)
    scene = view.scene()
    assert set(scene.node_items) == {"x", "w", "s"} and len(scene.wire_items) == 2
    unknown = scene.node_items["w"]
    assert not unknown.display.known_type and unknown.errors
    assert scene.node_items["s"].errors
    view.fit_all()
    view.grab()  # paints every kind of item without raising


def test_closing_a_view_whose_graph_is_being_collected_does_not_raise(qtbot) -> None:
    # Python's cycle collector may clear the graph before the view's destroyed
    # signal reaches the scene; leaving must not raise inside Qt's event loop.
    doc = Document(small_revnet())
    view = GraphView(doc)
    qtbot.addWidget(view)
    scene = view.scene()
    scene.graph = Graph.__new__(Graph)  # a graph whose attributes are already gone
    scene.detach()
    view.close()
    assert scene._connections == []


def _drag(view, item, to_centre):
    """Drag ``item`` by its header so that its centre ends at ``to_centre`` (scene)."""
    grab = item.mapToScene(QPointF(60, 10))
    offset = item.sceneBoundingRect().center() - grab
    start = view.mapFromScene(grab)
    end = view.mapFromScene(to_centre - offset)
    QTest.mousePress(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for step in range(1, 9):
        QTest.mouseMove(view.viewport(), start + (end - start) * step / 8)
    QTest.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, end)


def test_an_unwired_node_dragged_onto_a_wire_goes_into_it(view):
    # Only a palette drop spliced a node into a wire; dragging one already on the canvas just
    # left it lying on the wire, unconnected.
    view.show()
    qtbot_wait_exposed(view)
    scene, doc = view.scene(), view.document
    doc.push(AddNode(doc.graph, Node("act", "Activation", {}, (1100.0, 400.0))))
    settle(view)
    edge = next(e for e in doc.graph.edges if str(e.dst) == "y.in")
    view.centerOn(1125, 150)
    middle = scene.wire_items[edge].scene_path().pointAtPercent(0.5)
    count = doc.undo_stack.count()
    _drag(view, scene.node_items["act"], middle)
    assert doc.undo_stack.count() == count + 1  # move and splice: one step
    edges = {str(e) for e in doc.graph.edges}
    assert "c.out -> act.in" in edges and "act.out -> y.in" in edges and str(edge) not in edges
    doc.undo_stack.undo()
    assert str(edge) in {str(e) for e in doc.graph.edges} and doc.graph.node("act").pos == (1100.0, 400.0)


def test_a_wired_node_dragged_onto_a_wire_only_moves(view):
    view.show()
    qtbot_wait_exposed(view)
    scene, doc = view.scene(), view.document
    before = {str(e) for e in doc.graph.edges}
    edge = next(e for e in doc.graph.edges if str(e.dst) == "y.in")
    view.centerOn(1125, 150)
    _drag(view, scene.node_items["f"], scene.wire_items[edge].scene_path().pointAtPercent(0.5))
    assert {str(e) for e in doc.graph.edges} == before and doc.graph.node("f").pos != (500.0, 0.0)
