"""Auto layout (Ctrl+L) on real projects: branches on their own rows, wires clear of nodes,
region backdrops apart, and a 1,000-node graph laid out in one command."""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QApplication

from revstudio.core import project
from revstudio.core.generate import large_graph, revnet_chain
from revstudio.qt.canvas import GraphView, layout
from revstudio.qt.document import Document

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "resources" / "examples").glob("*.revs"))


@pytest.fixture
def laid_out(qtbot):
    docs: list[Document] = []

    def make(graph) -> GraphView:
        doc = Document(graph)
        docs.append(doc)
        view = GraphView(doc)
        qtbot.addWidget(view)
        view.resize(1200, 700)
        assert view.auto_layout(selection_only=False)
        QApplication.processEvents()  # region backdrops refit once the moves settle
        return view

    yield make
    for doc in docs:
        doc.undo_stack.clear()


def _wire_hits(view: GraphView) -> list[str]:
    """Wires whose path runs through a node other than their two ends."""
    scene = view.scene()
    rects = {n: i.sceneBoundingRect().adjusted(12, 12, -12, -12) for n, i in scene.node_items.items()}
    bad = []
    for edge, wire in scene.wire_items.items():
        path = wire.scene_path()
        for k in range(1, 200):
            p = path.pointAtPercent(k / 200)
            hit = next((n for n, r in rects.items() if n not in (edge.src.node, edge.dst.node) and r.contains(p)), None)
            if hit is not None:
                bad.append(f"{edge} runs through {hit}")
                break
    return bad


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_layout_of_each_example_keeps_wires_clear_of_nodes(laid_out, path):
    view = laid_out(project.load(str(path)))
    assert _wire_hits(view) == []
    rects = [i.sceneBoundingRect().adjusted(6, 6, -6, -6) for i in view.scene().node_items.values()]
    for i, r in enumerate(rects):
        assert not any(r.intersects(s) for s in rects[i + 1:]), "nodes overlap"


def test_a_revnet_block_puts_its_branch_on_its_own_row(laid_out):
    view = laid_out(project.load(str(next(p for p in EXAMPLES if p.stem == "revnet_wired"))))
    g = view.document.graph
    split = next(n for n in g.nodes.values() if n.type == "Split")
    merge = next(e.dst.node for e in g.edges if e.src == type(e.src)(split.id, "out0"))
    branch = [e.dst.node for e in g.edges if e.src.node == split.id and e.src.port == "out1"
              and g.node(e.dst.node).type == "Conv"]
    assert branch, "the example's coupling has a Conv branch"
    items = view.scene().node_items
    skip_y = items[split.id].port_scene_pos("out0", True).y()
    conv = items[branch[0]].sceneBoundingRect()
    assert conv.top() > skip_y + 12, "the skip wire's row is free: the branch sits below it"
    # the skip wire runs level from the Split until just before the Merge
    wire = next(w for e, w in view.scene().wire_items.items() if e.src.node == split.id and e.src.port == "out0")
    path = wire.scene_path()
    level = [path.pointAtPercent(k / 20).y() for k in range(1, 10)]
    assert max(abs(y - skip_y) for y in level) < 1.0
    assert items[merge].pos().x() > conv.right()


def test_layout_positions_are_whole_pixels_and_undo_in_one_step(laid_out):
    view = laid_out(revnet_chain(3, channels=4, size=8))
    doc = view.document
    for node in doc.graph.nodes.values():
        assert node.pos == (round(node.pos[0]), round(node.pos[1]))
    doc.undo_stack.undo()
    assert doc.undo_stack.index() == 0


def test_layout_of_1000_nodes_is_one_move_with_backdrops_apart(laid_out):
    view = laid_out(large_graph(1000))  # two lanes of wired RevNet blocks, one region each
    boxes = [r.box().adjusted(0, -30, 0, 0) for r in view.scene().region_items]  # with the label line
    assert len(boxes) >= 2
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.intersects(b), f"backdrops overlap: {a} {b}"
    doc = view.document
    assert doc.undo_stack.count() == 1
    # History and Edit > Undo name the step as the menu item it came from (it read "Layout graph")
    assert doc.undo_stack.text(0) == "Auto Layout"
    xs = {n.id: n.pos[0] for n in doc.graph.nodes.values()}
    assert all(xs[e.src.node] < xs[e.dst.node] for e in doc.graph.edges)


def test_pav_fit_is_monotone_and_weighted():
    assert layout._isotonic([3.0, 1.0, 2.0], [1.0, 1.0, 1.0]) == [2.0, 2.0, 2.0]
    fit = layout._isotonic([0.0, -10.0], [9.0, 1.0])
    assert fit[0] == fit[1] == pytest.approx(-1.0)


def test_a_source_feeding_a_late_node_sits_next_to_it():
    sizes = {n: (100.0, 50.0) for n in "abcdk"}
    pos = layout.layered_layout("abcdk", [("a", "b"), ("b", "c"), ("c", "d"), ("k", "d")], sizes)
    assert pos["c"][0] < pos["k"][0] + 101 and pos["k"][0] > pos["b"][0]
    assert QRectF(*pos["k"], 100, 50).intersects(QRectF(*pos["c"], 100, 50)) is False
    assert QPointF(*pos["a"]).x() == 0.0


def test_layout_steps_are_named_as_the_menu_items(make_window, revnet):
    """History, Edit > Undo and a read-only tab's 'Not edited (…)' said "Layout graph" and
    "Layout selection" for View > Auto Layout and Layout Selection."""
    window = make_window(revnet)
    stack = window.document.undo_stack
    for name in ("layout", "layout_selection"):
        window.select_all()
        revnet.move("f", (revnet.nodes["f"].pos[0] + 333, 777))  # (something to lay out again)
        action = window.actions_by_name[name]
        action.trigger()
        assert stack.text(stack.index() - 1) == action.text().replace("&", "")
