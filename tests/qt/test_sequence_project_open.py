"""A reversible sequence project written without the editor, as a researcher's script writes one.

A project whose file gives its nodes no positions (written by hand or by a script through
``Graph.add_node``, whose default is the origin) opens laid out, as Auto Layout would, in one
undoable step; so does a group body in that state when its tab opens. Every card was drawn on
the one before it, a single pile a user had to pull apart or lay out by hand. A body used by a
coupling inside another body names that user in the inspector."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from revstudio.qt.canvas.editing import STACKED_LAYOUT
from revstudio.qt.canvas.layout import stacked


def _body(rnn: str) -> dict[str, Any]:
    return {"nodes": [{"id": "in", "type": "GroupInput", "params": {"port": "in"}},
                      {"id": rnn, "type": "BiRNN", "params": {"cell": "gru", "hidden_size": 4}},
                      {"id": "out", "type": "GroupOutput", "params": {"port": "out"}}],
            "edges": [["in.out", f"{rnn}.in"], [f"{rnn}.out", "out.in"]]}


def _sequence_project(path: Path, positions: dict[str, list[int]] | None = None) -> str:
    """A reversible sequence model (BiRNNs in a coupling, repeated); nodes without ``pos`` unless given."""
    nodes = [{"id": "seq", "type": "Input", "params": {"shape": [16, 20]}},
             {"id": "blocks", "type": "Repeat", "params": {"group": "block", "times": 2}},
             {"id": "pool", "type": "Pool", "params": {"kind": "global_avg"}},
             {"id": "head", "type": "Linear", "params": {"out_features": 3}},
             {"id": "logits", "type": "Output", "params": {}}]
    for node in nodes:
        if positions and node["id"] in positions:
            node["pos"] = positions[node["id"]]
    block = {"nodes": [{"id": "in", "type": "GroupInput", "params": {"port": "in"}},
                       {"id": "coupling", "type": "AdditiveCoupling", "params": {"f": "f", "g": "g"}},
                       {"id": "out", "type": "GroupOutput", "params": {"port": "out"}}],
             "edges": [["in.out", "coupling.in"], ["coupling.out", "out.in"]]}
    path.write_text(json.dumps({
        "format": "revstudio", "version": 1, "name": "seq", "nodes": nodes,
        "edges": [["seq.out", "blocks.in"], ["blocks.out", "pool.in"], ["pool.out", "head.in"],
                  ["head.out", "logits.in"]],
        "groups": {"block": block, "f": _body("f_rnn"), "g": _body("g_rnn")}}), encoding="utf-8")
    return str(path)


def _overlapping(view: Any) -> list[tuple[str, str]]:
    items = sorted(view.scene().node_items.items())
    return [(a, b) for i, (a, ia) in enumerate(items) for b, ib in items[i + 1:]
            if ia.sceneBoundingRect().intersects(ib.sceneBoundingRect())]


def test_a_file_without_positions_opens_laid_out_in_one_undoable_step(make_window, settle, tmp_path):
    window = make_window()
    assert window.files.load_path(_sequence_project(tmp_path / "seq.revs"))
    settle()
    view = window.tabs.main_view()
    assert _overlapping(view) == []
    graph = window.document.graph
    xs = [graph.nodes[n].pos[0] for n in ("seq", "blocks", "pool", "head", "logits")]
    assert xs == sorted(xs) and len(set(xs)) == 5  # left to right along the wires
    stack = window.document.undo_stack
    assert [stack.text(i) for i in range(stack.count())] == [STACKED_LAYOUT]
    assert not window.document.is_dirty()  # the editor's own layout: closing it unedited asks nothing
    assert "laid out its nodes, which the file placed on one another" in window.statusBar().currentMessage()
    stack.undo()
    assert {graph.nodes[n].pos for n in graph.nodes} == {(0.0, 0.0)}


def test_a_group_body_without_positions_is_laid_out_when_its_tab_opens(make_window, settle, tmp_path):
    window = make_window()
    assert window.files.load_path(_sequence_project(tmp_path / "seq.revs"))
    assert window.tabs.open_group("f")
    settle()
    view = window.current_view()
    assert view.graph is window.document.graph.groups["f"]
    assert _overlapping(view) == []
    assert window.document.undo_stack.text(window.document.undo_stack.count() - 1) == STACKED_LAYOUT
    assert not window.document.is_dirty()


def test_a_hand_made_layout_with_one_node_dropped_on_another_stays_as_it_is(make_window, settle, tmp_path):
    positions = {"seq": [0, 0], "blocks": [240, 0], "pool": [480, 0], "head": [480, 0], "logits": [960, 0]}
    window = make_window()
    assert window.files.load_path(_sequence_project(tmp_path / "seq.revs", positions))
    settle()
    assert window.document.undo_stack.count() == 0
    assert window.document.graph.nodes["head"].pos == (480.0, 0.0)


def test_stacked_means_at_least_half_of_two_or_more_nodes_share_a_position():
    assert stacked([(0, 0), (0, 0)])
    assert stacked([(0, 0), (0, 0), (5, 0), (9, 0)])
    assert not stacked([(0, 0), (0, 0), (5, 0), (9, 0), (12, 0)])
    assert not stacked([(0, 0)])
    assert not stacked([])
    assert not stacked([(0, 0), (0, 1)])


def test_a_coupling_body_inside_a_repeated_block_names_its_user(make_window, settle, tmp_path):
    """The F body of the coupling inside the repeated block said "Used by: no node yet": only the
    project's top-level nodes were asked."""
    window = make_window()
    assert window.files.load_path(_sequence_project(tmp_path / "seq.revs"))
    assert window.tabs.open_group("f")
    settle()
    window.inspector.set_selection(window.current_view().graph, [])
    settle()
    text = window.inspector.facts.text()
    assert "block/coupling" in text and "no node yet" not in text
    assert window.tabs.open_group("block")
    settle()
    window.inspector.set_selection(window.current_view().graph, [])
    settle()
    assert "blocks" in window.inspector.facts.text()
