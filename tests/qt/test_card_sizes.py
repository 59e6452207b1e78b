"""The canvas's cards are as large as core.card measures them without Qt (what revstudio merge
sets the other branch's new nodes clear by): one source for both, checked on every example."""
from __future__ import annotations

import pytest

from revstudio import resources
from revstudio.core.card import card_sizes
from revstudio.core.check import check
from revstudio.core.project import load
from revstudio.qt.canvas import GraphView
from revstudio.qt.document import Document


@pytest.mark.parametrize("example", ["glow_flow", "two_branch_concat", "birnn_sequence"])
def test_every_card_on_the_canvas_has_the_size_core_measures(qtbot, example: str) -> None:
    graph = load(resources.path("examples", f"{example}.revs"))
    graph.add_node("Concat", "tall", {"inputs": 12}, (0, -800))  # a card of 12 port rows
    view = GraphView(Document(graph))
    qtbot.addWidget(view)
    items = view.scene().node_items
    sizes = card_sizes(graph, check(graph))
    assert set(sizes) == set(items)
    # (an item's rect reaches OUTLINE past its card on every side: its ports and selection)
    drawn = {i: (item.rect().width() + 2 * item.rect().x(), item.height) for i, item in items.items()}
    assert sizes == drawn
    assert sizes["tall"][1] > 12 * 18
