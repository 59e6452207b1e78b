"""Ctrl+K lists the nearest cards first: Enter wires the card beside the selection, not the graph's Input.

In a generated 400-node project, a node whose input was free listed "x.out → ..." first (node
order) and the card just left of it some hundred lines down: keyboard wiring meant typing its id.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from revstudio.core.commands import Disconnect
from revstudio.core.generate import large_graph


def test_enter_in_ctrl_k_wires_the_card_left_of_the_node(make_window, settle):
    graph = large_graph(200)
    window = make_window(graph)
    view = window.current_view()
    feed = next(e for e in graph.edges if e.dst.node == "l0b12_f_relu")
    window.document.push(Disconnect(graph, feed))
    assert str(feed.src) == "l0b12_f_conv1.out"
    view.select_nodes(["l0b12_f_relu"])
    popup = view.open_connect()
    assert popup.visible_labels()[0] == "l0b12_f_conv1.out → l0b12_f_relu.in"
    QTest.keyClick(popup.search, Qt.Key.Key_Return)
    settle()
    assert any(e.src == feed.src and e.dst == feed.dst for e in graph.edges)


def test_wires_out_of_a_node_list_the_cards_right_of_it_first(make_window):
    from revstudio.core.graph import Graph

    g = Graph("row")
    g.add_node("Input", "x", {"shape": [4, 8, 8]}, (0, 0))
    g.add_node("Activation", "far", {"fn": "relu"}, (-900, 300))  # first in node order, far off to the left
    g.add_node("Activation", "a", {"fn": "relu"}, (220, 0))
    g.add_node("Activation", "next", {"fn": "relu"}, (440, 0))     # the card right of a
    g.add_node("Output", "y", {}, (660, 0))
    g.connect("x.out", "a.in")
    g.connect("next.out", "y.in")
    window = make_window(g)
    view = window.current_view()
    view.select_nodes(["a"])
    labels = view.open_connect().visible_labels()
    assert labels[:2] == ["a.out → next.in", "a.out → far.in"]
