"""A BiRNN node's inspector says which axis it reads as time: a sequence drawn as (time, features),
the order a sequence researcher's arrays have, was read as time-many features over feature-many steps
with no sign of it (the shapes fit, the run trained, on the wrong axis)."""
from __future__ import annotations

from revstudio.core.graph import Graph
from revstudio.nodes.recurrent import reading


def _facts(inspect, shape: list[int]) -> str:
    g = Graph("seq")
    g.add_node("Input", "x", {"shape": shape}, (0, 0))
    g.add_node("BiRNN", "rnn", {"cell": "gru", "hidden_size": 4}, (240, 0))
    g.add_node("Output", "y", {}, (480, 0))
    g.connect("x.out", "rnn.in")
    g.connect("rnn.out", "y.in")
    return inspect(g, ["rnn"])[1].facts.text()


def test_the_inspector_says_a_birnn_reads_the_last_axis_as_time(inspect):
    assert "64 steps of 16 features (time is the last axis)" in _facts(inspect, [16, 64])
    drawn_time_first = _facts(inspect, [64, 16])
    assert "16 steps of 64 features (time is the last axis)" in drawn_time_first


def test_an_image_read_by_a_birnn_is_read_along_its_width():
    assert reading((3, 8, 20)) == "20 steps of 24 features (3x8 a step) (time is the last axis)"
    assert reading((5,)) is None and reading(None) is None
