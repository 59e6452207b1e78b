"""A region's backdrop covers its members only: a label longer than a narrow region runs past the
box (or is elided, the full text in the tooltip) but never widens the box over the next node."""
from __future__ import annotations

from pathlib import Path

import pytest

from revstudio.core.graph import Graph
from revstudio.core.project import load
from revstudio.qt.canvas import GraphView
from revstudio.qt.canvas.region_item import RegionItem
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
    return len(scene.region_items)


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
