"""A region's backdrop covers its members only: a label longer than a narrow region runs past the
box (or is elided, the full text in the tooltip) but never widens the box over the next node, nor
runs over the label of a region beside it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QFontMetricsF

from revstudio.core.commands import RenameNode, SetParam
from revstudio.core.generate import revnet_chain
from revstudio.core.graph import Graph
from revstudio.core.project import load
from revstudio.qt.canvas import GraphView
from revstudio.qt.canvas.region_item import MIN_LABEL_CHARS, RegionItem
from revstudio.qt.document import Document

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "resources" / "examples").glob("*.revs"))
ZOOMS = (0.1, 0.14, 0.25, 0.5, 1.0, 2.0)


@pytest.fixture
def views(qtbot):
    docs: list[Document] = []

    def make(graph: Graph, body: str | None = None) -> GraphView:
        doc = Document(graph)
        docs.append(doc)
        view = GraphView(doc, graph.groups[body] if body else None)
        qtbot.addWidget(view)
        return view

    yield make
    for doc in docs:
        doc.undo_stack.clear()


def _assert_only_members(view: GraphView, where: str) -> int:
    scene = view.scene()
    for region in scene.region_items:
        box = region.box()
        for node_id, item in scene.node_items.items():
            rect = item.sceneBoundingRect()
            if node_id in region.node_ids:
                assert box.contains(rect), (where, region.region_id, node_id)
            else:
                assert not box.intersects(rect), f"{where}: region {region.region_id} covers non-member {node_id}"
        for lod in ZOOMS:
            _, rect, shown, inside = region.label_layout(lod)
            assert shown == region.label or region.label in region.toolTip(), (where, lod, shown)
            if not inside:  # above the box: it must not run over another node's card either
                for node_id, item in scene.node_items.items():
                    if node_id not in region.node_ids:
                        assert not rect.intersects(item.sceneBoundingRect()), (where, lod, node_id)
    _assert_labels_apart(scene.region_items, where)
    return len(scene.region_items)


# two one-node regions (two inputs' InvConv1x1) side by side in one row
ROW = {"format": "revstudio", "version": 1, "name": "two-regions-one-row", "nodes": [
    {"id": "left_input", "type": "Input", "params": {"shape": [8, 16, 16]}, "pos": [0, 200]},
    {"id": "right_input", "type": "Input", "params": {"shape": [8, 16, 16]}, "pos": [500, 200]},
    {"id": "left_invertible_mixing", "type": "InvConv1x1", "pos": [0, 0]},
    {"id": "right_invertible_mixing", "type": "InvConv1x1", "pos": [250, 0]},
    {"id": "left_output", "type": "Output", "pos": [0, -200]},
    {"id": "right_output", "type": "Output", "pos": [500, -200]}], "edges": [
    ["left_input.out", "left_invertible_mixing.in"], ["left_invertible_mixing.out", "left_output.in"],
    ["right_input.out", "right_invertible_mixing.in"], ["right_invertible_mixing.out", "right_output.in"]]}


def _drawn(region: RegionItem, lod: float) -> QRectF | None:
    """Where the label's text is drawn above the box at zoom ``lod`` (None: inside the box)."""
    font, rect, shown, inside = region.label_layout(lod)
    if inside:
        return None
    return QRectF(rect.left(), rect.top(), min(rect.width(), QFontMetricsF(font).horizontalAdvance(shown)),
                  rect.height())


def _assert_labels_apart(regions: list[RegionItem], where: str) -> None:
    for lod in ZOOMS:
        for i, one in enumerate(regions):
            for other in regions[i + 1:]:
                a, b = _drawn(one, lod), _drawn(other, lod)
                if a is not None and b is not None:
                    assert not a.intersects(b), (where, lod, one.region_id, other.region_id, a, b)


def test_no_backdrop_covers_a_node_outside_its_region_in_any_example(views):
    assert EXAMPLES
    regions = 0
    for path in EXAMPLES:
        graph = load(path)
        regions += _assert_only_members(views(graph), path.name)
        for body in graph.groups:
            regions += _assert_only_members(views(graph, body), f"{path.name}:{body}")
    assert regions >= 5  # the test looked at backdrops, not at empty scenes


def test_revnet_coupling_backdrop_leaves_the_pool_node_outside(views):
    path = next(p for p in EXAMPLES if p.name == "revnet_coupling.revs")
    scene = views(load(path)).scene()
    (region,) = [r for r in scene.region_items if len(r.node_ids) == 1]
    pool = next(i for n, i in scene.node_items.items() if i.node_id not in region.node_ids
                and load(path).nodes[n].type == "Pool")
    assert not region.box().intersects(pool.sceneBoundingRect())


def test_a_region_of_one_small_node_keeps_a_readable_whole_or_elided_label(views):
    item = RegionItem("r0", ("a",), "reversible · saves 638.0 KiB kept, 3 of 4 steps kept by budget", "tip")
    from PySide6.QtCore import QRectF

    item.fit([QRectF(0, 0, 60, 40)])
    assert item.box().width() == pytest.approx(60 + 36)  # the member and its margin, not the label
    for lod in ZOOMS:
        font, rect, shown, inside = item.label_layout(lod)
        assert shown == item.label or (shown and item.label in item.toolTip())
        from PySide6.QtGui import QFontMetricsF

        assert QFontMetricsF(font).height() * lod >= 9.5  # screen px: readable


def test_the_labels_of_two_short_regions_side_by_side_in_one_row_do_not_overlap(views, tmp_path):
    """Two one-node regions (two inputs' InvConv1x1) side by side: the left label, far longer than
    its box, was drawn over the right one's at every zoom. It stops short of the next box now, cut
    with an ellipsis; the tooltip has it whole, and the right one, with room, stays whole."""
    path = tmp_path / "row.revs"
    path.write_text(json.dumps(ROW))
    scene = views(load(path)).scene()
    left, right = sorted(scene.region_items, key=lambda r: r.box().left())
    assert (left.node_ids, right.node_ids) == (("left_invertible_mixing",), ("right_invertible_mixing",))
    assert abs(left.box().top() - right.box().top()) < 1 and left.box().right() < right.box().left()
    _assert_labels_apart([left, right], "one row")
    for lod in ZOOMS:
        shown = left.label_layout(lod)[2]
        assert shown != left.label and left.label in left.toolTip(), (lod, shown)
        assert shown == "" or "…" in shown, (lod, shown)  # cut, or too short to draw (below)
    assert right.label_layout(1.0)[2] == right.label  # nothing to its right: whole
    moved = scene.node_items["right_invertible_mixing"]
    moved.moveBy(600, 0)  # dragged out of the way (as a drag moves it, then commits it): whole again
    scene.item_moved(moved)
    scene.commit_moves()
    assert left.label_layout(1.0)[2] == left.label


def test_a_label_cut_to_a_few_characters_far_out_is_not_drawn(views, tmp_path):
    """Far out (0.14) the left label beside its close neighbour was cut to 'r…)': three characters
    that say nothing the green box does not. A label cut below MIN_LABEL_CHARS is left out at that
    zoom (the tooltip has it whole); where more of it fits, it is cut as before."""
    path = tmp_path / "row.revs"
    path.write_text(json.dumps(ROW))
    scene = views(load(path)).scene()
    left, right = sorted(scene.region_items, key=lambda r: r.box().left())
    for lod in (0.1, 0.14):
        assert left.label_layout(lod)[2] == "", lod
    for lod in ZOOMS:
        shown = left.label_layout(lod)[2]
        assert shown == "" or len(shown.replace("…", "")) >= MIN_LABEL_CHARS, (lod, shown)
        assert len(right.label_layout(lod)[2]) > MIN_LABEL_CHARS, lod  # room on its right: drawn at every zoom
    assert len(left.label_layout(1.0)[2]) > MIN_LABEL_CHARS  # near, enough of it fits: still drawn


def test_an_edit_that_leaves_a_region_as_it_was_keeps_its_backdrop(views):
    """Replacing a region's backdrop after every edit repainted the whole box, every wire across
    it with it (a 500-node region at 1,000 nodes), before the edit showed: a region with the same
    id and nodes keeps its item, relabelled in place."""
    view = views(revnet_chain(3, channels=4, size=8))
    scene, doc = view.scene(), view.document
    before = list(scene.region_items)
    assert before
    act = next(n for n, v in doc.graph.nodes.items() if v.type == "Activation")
    doc.push(SetParam(doc.graph, act, "fn", "tanh"))
    doc.current_report()
    assert scene.region_items == before and all(r.scene() is scene for r in before)
    assert [r.label for r in scene.region_items] == [r.label for r in views(doc.graph).scene().region_items]
    doc.push(RenameNode(doc.graph, act, "renamed"))  # the same region, one member renamed
    doc.current_report()
    assert scene.region_items == before and "renamed" in before[0].node_ids and act not in before[0].node_ids
    assert scene._regions_by_node["renamed"] == [before[0]]


def test_a_badge_that_reads_the_same_after_an_edit_does_not_repaint_its_box(views, monkeypatch):
    """Once the edit's figures are made the badges are relabelled; a badge that reads the same
    repainted its whole box (every wire across a 500-node region) for nothing."""
    view = views(revnet_chain(3, channels=4, size=8))
    scene, doc = view.scene(), view.document
    labels = [r.label for r in scene.region_items]
    repaints: list[RegionItem] = []
    monkeypatch.setattr(RegionItem, "update", lambda self, *a: repaints.append(self))
    act = next(n for n, v in doc.graph.nodes.items() if v.type == "Activation")
    doc.push(SetParam(doc.graph, act, "fn", "tanh"))
    doc.recompute()
    assert doc.estimate_pending and not any(r.current for r in scene.region_items)
    doc.finish_estimate()
    assert [r.label for r in scene.region_items] == labels and all(r.current for r in scene.region_items)
    assert repaints == []
