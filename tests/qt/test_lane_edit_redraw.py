"""An unwire, rewire or delete inside a lane ends (or brings back) that lane's reversible region:
the canvas redraws only the cards whose words change (their parameter counts), not every card
that leaves or joins the region, and what it shows is exactly what drawing every card anew shows:
the backdrop gone or back, counts, error outlines, after the edit, its undo and its redo."""
from __future__ import annotations

from typing import Any

import pytest

from revstudio.core.commands import Connect, Disconnect, remove_nodes
from revstudio.core.generate import large_graph
from revstudio.qt.canvas.display import node_display


@pytest.fixture
def lanes(make_window, settle, monkeypatch):
    """A window on two lanes of ~370 nodes; ``drawn``: the cards built anew by node_display,
    ``changed``: the cards whose display changed, both since the last ``reset()``."""
    import revstudio.qt.canvas.node_item as item_module
    import revstudio.qt.canvas.scene as scene_module

    w = make_window(large_graph(750))  # two lanes of ~370 nodes
    drawn: list[str] = []
    changed: list[str] = []

    def counted(graph, node_id, report, in_region):
        drawn.append(node_id)
        return node_display(graph, node_id, report, in_region)

    set_display = item_module.NodeItem.set_display

    def watched(self, display):
        if display != self.display:
            changed.append(self.node_id)
        return set_display(self, display)

    monkeypatch.setattr(scene_module, "node_display", counted)
    monkeypatch.setattr(item_module.NodeItem, "set_display", watched)

    class Lanes:
        window, doc, scene = w, w.document, w.current_view().scene()

        def reset(self) -> None:
            drawn.clear()
            changed.clear()

        def edit(self, fn: Any) -> None:
            self.reset()
            fn()
            self.doc.current_report()
            settle()

    Lanes.drawn, Lanes.changed = drawn, changed
    return Lanes()


def _lane(scene, lane: str) -> set[str]:
    return {n for n in scene.node_items if n.startswith(f"{lane}b")}


def _assert_drawn_as_anew(lanes) -> None:
    """Every card reads what a card drawn from scratch reads; each backdrop holds exactly the
    region's nodes and covers their cards; the scene's node -> backdrop map agrees."""
    scene, doc = lanes.scene, lanes.doc
    regions = {r.id: set(r.nodes) for r in doc.report.regions}
    in_region = set().union(*regions.values()) if regions else set()
    for node_id, item in scene.node_items.items():
        assert item.display == node_display(doc.graph, node_id, doc.report, node_id in in_region), node_id
    assert {r.region_id: set(r.node_ids) for r in scene.region_items} == regions
    for region in scene.region_items:
        assert region.scene() is scene
        for node_id in region.node_ids:
            assert region.box().contains(scene.node_items[node_id].sceneBoundingRect()), node_id
    assert set(scene._regions_by_node) == in_region
    gone = [i for i in scene.items() if getattr(i, "region_id", None) is not None and i not in scene.region_items]
    assert not gone  # no backdrop of a region that ended is left behind


def test_an_unwire_in_a_lane_redraws_only_the_cards_whose_counts_change(lanes):
    doc, scene = lanes.doc, lanes.scene
    lane0 = _lane(scene, "l0")
    assert len(lane0) > 150 and any(lane0 <= set(r.node_ids) for r in scene.region_items)
    wire = next(e for e in doc.graph.edges if e.dst.node == "l0b0_f_relu")
    lanes.edit(lambda: doc.push(Disconnect(doc.graph, wire)))
    assert not any(set(r.node_ids) & lane0 for r in scene.region_items)  # lane 0's region ended
    # the convs after the cut lose their counts (their input shapes are unknown): those cards
    # change; the rest of the lane only left the region, which their cards do not show
    assert 50 < len(lanes.changed) < len(lane0)
    assert len(lanes.drawn) <= 2  # was each of the lane's ~200 cards, built anew from its spec
    assert scene.node_items["l0b0_f_relu"].errors  # the unwired input is still outlined
    _assert_drawn_as_anew(lanes)

    lanes.edit(doc.undo_stack.undo)  # the wire back: the region and the counts come back
    assert any(lane0 <= set(r.node_ids) for r in scene.region_items)
    assert len(lanes.drawn) <= 2 and 50 < len(lanes.changed) < len(lane0)
    assert not scene.node_items["l0b0_f_relu"].errors
    _assert_drawn_as_anew(lanes)

    lanes.edit(doc.undo_stack.redo)
    assert not any(set(r.node_ids) & lane0 for r in scene.region_items)
    assert len(lanes.drawn) <= 2
    _assert_drawn_as_anew(lanes)


def test_a_delete_in_a_lane_and_its_undo_and_redo_show_the_region_exactly(lanes):
    doc, scene = lanes.doc, lanes.scene
    lane0 = _lane(scene, "l0")
    lanes.edit(lambda: doc.push(remove_nodes(doc.graph, ["l0b0_f_relu"])))
    assert "l0b0_f_relu" not in scene.node_items
    assert not any(set(r.node_ids) & lane0 for r in scene.region_items)
    assert len(lanes.drawn) <= 2
    _assert_drawn_as_anew(lanes)

    lanes.edit(doc.undo_stack.undo)
    assert any(lane0 <= set(r.node_ids) for r in scene.region_items)
    # the node that came back is built from its spec; the lane's other cards only get counts
    assert set(lanes.drawn) <= {"l0b0_f_relu"}
    _assert_drawn_as_anew(lanes)

    lanes.edit(doc.undo_stack.redo)
    assert not any(set(r.node_ids) & lane0 for r in scene.region_items)
    assert len(lanes.drawn) <= 2
    _assert_drawn_as_anew(lanes)


def test_an_edit_in_one_lane_does_not_measure_the_other_lanes_backdrop(lanes, monkeypatch):
    """A backdrop whose members and their cards are unchanged keeps its box: the re-check of an
    unwire in lane 0 fitted lane 1's 200-card backdrop anew (every card's rect measured)."""
    doc, scene = lanes.doc, lanes.scene
    fitted: list[str] = []
    fit = type(scene)._fit_region

    def counted(self, region):
        fitted.append(region.region_id)
        return fit(self, region)

    monkeypatch.setattr(type(scene), "_fit_region", counted)
    lane1 = next(r for r in scene.region_items if "l1b0_split" in r.node_ids)
    box = lane1.box()
    wire = next(e for e in doc.graph.edges if e.dst.node == "l0b0_f_relu")
    lanes.edit(lambda: doc.push(Disconnect(doc.graph, wire)))
    assert fitted == [] and lane1.box() == box
    lanes.edit(doc.undo_stack.undo)  # lane 0's region is back: it alone is fitted
    assert lane1.region_id not in fitted and len(fitted) == 1
    _assert_drawn_as_anew(lanes)


def test_a_drag_that_ends_where_it_started_leaves_the_backdrop_fitted(lanes):
    """A drag grows the backdrops it crosses (cheaply, per mouse move); dropped back where it
    started, no move is pushed, and the box it grew shrank back only at the next edit before."""
    scene = lanes.scene
    item = scene.node_items["l1b0_f_relu"]
    region = next(r for r in scene.region_items if "l1b0_f_relu" in r.node_ids)
    box = region.box()
    item.moveBy(0, -3000)
    scene.item_moved(item)
    assert region.box().top() < box.top() - 2000  # grown to hold the dragged card
    item.moveBy(0, 3000)
    scene.item_moved(item)
    assert not scene.commit_moves()  # back where it was: nothing to undo
    assert region.box() == box


def test_the_inspector_reads_the_figures_it_shows_not_the_whole_estimate(lanes, monkeypatch):
    """An undo of a delete selects the node that came back, and the Inspector shows its weights,
    kept bytes and what its region saves: read from the estimate's tables, not from its JSON (a
    1,000-node estimate serialised for one node's figures, ~12 ms of the undo's first paint)."""
    from revstudio.diagnostics.estimate import MemoryEstimate
    from revstudio.qt.report_facts import human_bytes, region_label, region_of

    doc, scene = lanes.doc, lanes.scene
    built: list[int] = []
    build = MemoryEstimate._build_json

    def counted(self):
        built.append(len(self.nodes))
        return build(self)

    monkeypatch.setattr(MemoryEstimate, "_build_json", counted)
    conv = "l0b0_f_conv1"
    lanes.window.current_view().select_nodes([conv])
    lanes.edit(lambda: doc.push(remove_nodes(doc.graph, [conv])))
    lanes.edit(doc.undo_stack.undo)
    assert scene.node_items[conv].isSelected() and lanes.window.inspector.node_id == conv
    assert built == []  # was one whole estimate's JSON per estimate the Inspector read
    _assert_drawn_as_anew(lanes)

    text = lanes.window.inspector.facts.text().replace("&nbsp;", " ")
    figures = doc.report.estimate.to_json()  # what the Inspector showed before, read from the JSON
    weights = figures["nodes"][conv]["parameter_bytes"]
    label = region_label(*region_of(doc.report, conv))
    saved = figures["regions"][label]["saved_bytes"]
    assert weights > 0 and saved
    assert human_bytes(weights) in text and f"in {label}, saves {human_bytes(saved)}" in text, text


def _assert_wires_as_anew(lanes) -> None:
    """Every wire shows what a wire of a scene drawn from scratch shows: its shape label, colour,
    tooltip, the label's rect and whether it fits between the ends, its bounds."""
    from revstudio.qt.canvas.scene import GraphScene

    fresh = GraphScene(lanes.doc)
    fresh.hold_labels(lanes.scene.labels_held)  # (drawn from scratch for a view at the same zoom)
    try:
        assert set(fresh.wire_items) == set(lanes.scene.wire_items)
        for edge, wire in lanes.scene.wire_items.items():
            anew = fresh.wire_items[edge]
            assert (wire.label, wire.invalid, wire.toolTip(), wire.pos()) == \
                (anew.label, anew.invalid, anew.toolTip(), anew.pos()), edge
            assert (wire._label_rect, wire._label_fits, wire.boundingRect()) == \
                (anew._label_rect, anew._label_fits, anew.boundingRect()), edge
    finally:
        fresh.detach()


@pytest.fixture
def placed(monkeypatch):
    """The wires whose shape label was measured and placed, since the test's last clear()."""
    from revstudio.qt.canvas.wire_item import WireItem

    found: list[object] = []
    place = WireItem._place_label

    def counted(self):
        found.append(self.edge)
        return place(self)

    monkeypatch.setattr(WireItem, "_place_label", counted)
    return found


def test_a_rewire_in_a_lane_finds_its_labels_where_they_were(lanes, placed):
    """An unwire takes a lane's shapes away and the rewire brings them back: each label had
    that text on that curve before, so it is not measured and placed again (the new wire's label
    is), and every wire reads
    what a wire drawn from scratch reads, after the rewire, its undo and its redo."""
    doc = lanes.doc
    wire = next(e for e in doc.graph.edges if e.dst.node == "l0b0_f_relu")
    lanes.edit(lambda: doc.push(Disconnect(doc.graph, wire)))
    assert sum(1 for w in lanes.scene.wire_items.values() if not w.label) > 200  # the lane's shapes went
    _assert_wires_as_anew(lanes)
    placed.clear()
    lanes.edit(lambda: doc.push(Connect(doc.graph, wire.src, wire.dst)))
    assert not any(not w.label for w in lanes.scene.wire_items.values())
    assert set(placed) == {wire}  # the new wire's alone; was 481 placements of the labels that came back
    _assert_wires_as_anew(lanes)
    _assert_drawn_as_anew(lanes)
    for step in (doc.undo_stack.undo, doc.undo_stack.redo):
        placed.clear()
        lanes.edit(step)
        assert set(placed) <= {wire}
        _assert_wires_as_anew(lanes)
        _assert_drawn_as_anew(lanes)


def test_an_undo_of_a_delete_places_only_the_labels_of_the_wires_that_came_back(lanes, placed):
    doc = lanes.doc
    lanes.edit(lambda: doc.push(remove_nodes(doc.graph, ["l0b0_f_relu"])))
    placed.clear()
    lanes.edit(doc.undo_stack.undo)
    # the node's two wires are new items; the lane's other labels are those it showed before
    assert {(e.src.node, e.dst.node) for e in placed} <= {("l0b0_f_conv1", "l0b0_f_relu"),
                                                        ("l0b0_f_relu", "l0b0_f_conv2")}, placed
    _assert_wires_as_anew(lanes)
    _assert_drawn_as_anew(lanes)
    lanes.edit(doc.undo_stack.redo)
    _assert_wires_as_anew(lanes)


def test_a_moved_wire_places_its_label_on_its_new_curve(lanes, placed):
    """A label kept for a curve is not used on another: a moved node's wires place theirs anew."""
    doc, scene = lanes.doc, lanes.scene
    wire = next(e for e in doc.graph.edges if e.dst.node == "l0b0_f_relu")
    lanes.edit(lambda: doc.push(Disconnect(doc.graph, wire)))
    from revstudio.core.commands import Move

    x, y = doc.graph.nodes["l0b0_f_conv2"].pos
    lanes.edit(lambda: doc.push(Move(doc.graph, {"l0b0_f_conv2": (x + 300.0, y + 170.0)})))
    placed.clear()
    lanes.edit(lambda: doc.push(Connect(doc.graph, wire.src, wire.dst)))
    moved = {e for e in scene.wire_items if "l0b0_f_conv2" in (e.src.node, e.dst.node)}
    assert moved and moved <= set(placed)
    _assert_wires_as_anew(lanes)


def test_random_rewires_in_the_lanes_show_what_a_full_recompute_shows(lanes):
    """Wires taken off and drawn again at random: each goes back to its place, the state before is
    served from the memo (no region pass, no estimate), and the report, every card's text and every
    wire read what a full check and a scene drawn from scratch read."""
    import random

    from revstudio.diagnostics.check import full_check

    doc, rng = lanes.doc, random.Random(7)
    for _ in range(4):
        original = list(doc.graph.edges)
        wire = rng.choice(original)
        lanes.edit(lambda wire=wire: doc.push(Disconnect(doc.graph, wire)))
        hits = doc.memo.hits
        lanes.edit(lambda wire=wire: doc.push(Connect(doc.graph, wire.src, wire.dst)))
        assert list(doc.graph.edges) == original
        assert doc.memo.hits == hits + 1
        fresh = full_check(doc.graph)
        assert doc.report.to_json() == fresh.to_json()
        assert [doc.report.estimate.peak_bytes(m) for m in ("standard", "checkpoint", "reversible")] == \
            [fresh.estimate.peak_bytes(m) for m in ("standard", "checkpoint", "reversible")]
        _assert_drawn_as_anew(lanes)
        _assert_wires_as_anew(lanes)
