"""Unroll Repeat: a Repeat node becomes its copies as chained Group nodes, the network unchanged.

Repeat This Group had no way back but undo, and Ungroup refused a Repeat: to change one block of a
stack (the last one narrower, say) the user had to delete the Repeat and wire copies by hand.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from revstudio.core.check import check
from revstudio.core.commands import UndoStack
from revstudio.core.graph import GraphError
from revstudio.core.group_repeat import UNROLL_STEP, unroll_repeat
from revstudio.core.project import dumps, load

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_coupling.revs"


def test_a_repeat_unrolls_into_chained_group_nodes_with_the_same_network_and_undoes_whole() -> None:
    g = load(EXAMPLE)  # image -> stem -> blocks (Repeat of block) -> pool -> head -> logits
    g.set_param("blocks", "times", 3)
    before, report = dumps(g), check(g)
    assert report.valid
    stack = UndoStack()
    stack.push(unroll_repeat(g, "blocks"))
    assert [g.nodes[n].type for n in ("blocks", "blocks_2", "blocks_3")] == ["Group"] * 3
    assert all(g.nodes[n].params == {"group": "block"} for n in ("blocks", "blocks_2", "blocks_3"))
    wires = {(str(e.src), str(e.dst)) for e in g.edges}
    assert {("stem.out", "blocks.in"), ("blocks.out", "blocks_2.in"), ("blocks_2.out", "blocks_3.in"),
            ("blocks_3.out", "pool.in")} <= wires
    assert not any("blocks" == e.src.node and e.dst.node == "pool" for e in g.edges)
    after = check(g)
    assert after.valid and after.parameters == report.parameters  # each copy keeps its own weights
    assert after.nodes["logits"].inputs == report.nodes["logits"].inputs
    # in a row where the Repeat stood; what stood right of it moved over to make room
    x = load(EXAMPLE).nodes["blocks"].pos[0]
    assert [g.nodes[n].pos[0] for n in ("blocks", "blocks_2", "blocks_3")] == [x, x + UNROLL_STEP, x + 2 * UNROLL_STEP]
    assert g.nodes["pool"].pos[0] == load(EXAMPLE).nodes["pool"].pos[0] + 2 * UNROLL_STEP
    assert g.nodes["stem"].pos == load(EXAMPLE).nodes["stem"].pos
    order = list(g.nodes)
    assert order.index("blocks") + 1 == order.index("blocks_2") and order.index("blocks_3") < order.index("pool")
    stack.undo()
    assert dumps(g) == before
    stack.redo()
    assert g.nodes["blocks_3"].type == "Group"


def test_unroll_refuses_what_is_not_a_repeat_of_a_known_group() -> None:
    g = load(EXAMPLE)
    with pytest.raises(GraphError, match="not a Repeat node"):
        unroll_repeat(g, "stem")
    g.set_param("blocks", "group", "nosuch")
    with pytest.raises(GraphError, match="names no group of this project"):
        unroll_repeat(g, "blocks")
