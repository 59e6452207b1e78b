"""Graph primitives: each mutator changes one fact and emits its event, then ``changed``."""
from __future__ import annotations

from typing import Any

import pytest

from revstudio.core.graph import Edge, Graph, GraphError, Node, PortRef, valid_id


def record(graph: Graph) -> list[tuple[Any, ...]]:
    """Subscribe to every event of ``graph``; returns the list the events land in."""
    log: list[tuple[Any, ...]] = []
    for name in ("node_added", "node_removed", "edge_added", "edge_removed", "param_changed",
                 "node_moved", "group_changed", "changed"):
        getattr(graph, name).sub(lambda *args, _n=name: log.append((_n, *args)))
    return log


def names(log: list[tuple[Any, ...]]) -> list[str]:
    return [entry[0] for entry in log]


def small() -> Graph:
    g = Graph("t")
    g.add_node("Input", "x", {"shape": [3, 8]})
    g.add_node("Conv", "c", {"out_channels": 4}, pos=(100, 0))
    g.add_node("Output", "y", pos=(200, 0))
    g.connect("x.out", "c.in")
    g.connect("c.out", "y.in")
    return g


def test_add_node_emits_node_added_then_changed() -> None:
    g = Graph()
    log = record(g)
    node = g.add_node("Conv", "c1", {"out_channels": 8}, pos=(1, 2))
    assert names(log) == ["node_added", "changed"]
    assert log[0][1] is node and node.pos == (1.0, 2.0) and node.params == {"out_channels": 8}


def test_add_node_picks_a_unique_id_from_the_type() -> None:
    g = Graph()
    assert g.add_node("Conv").id == "conv"
    assert g.add_node("Conv").id == "conv1"
    assert g.add_node("Conv").id == "conv2"


@pytest.mark.parametrize("bad", ["", "a b", "a.b", "x" * 65, "a\n", "tab\t", "nul\x00", 3])
def test_bad_ids_are_refused(bad: Any) -> None:
    assert not valid_id(bad)
    with pytest.raises(GraphError, match="not allowed"):
        Graph().add_node("Conv", bad)


def test_duplicate_id_is_refused() -> None:
    g = small()
    with pytest.raises(GraphError, match="already exists"):
        g.add_node("Conv", "c")


def test_remove_node_removes_its_edges_first() -> None:
    g = small()
    log = record(g)
    removed = g.remove_node("c")
    assert removed.id == "c" and "c" not in g
    assert names(log) == ["edge_removed", "changed", "edge_removed", "changed", "node_removed", "changed"]
    assert g.edges == []


def test_connect_and_disconnect_emit_edge_events() -> None:
    g = Graph()
    g.add_node("A", "a")
    g.add_node("B", "b")
    log = record(g)
    edge = g.connect("a.out", "b.in")
    assert edge == Edge(PortRef("a", "out"), PortRef("b", "in"))
    assert names(log) == ["edge_added", "changed"] and log[0][1] == edge
    g.remove_edge(edge)
    assert names(log)[2:] == ["edge_removed", "changed"]
    with pytest.raises(GraphError, match="no edge"):
        g.remove_edge(edge)


def test_connect_refuses_missing_nodes_and_duplicates() -> None:
    g = small()
    with pytest.raises(GraphError, match="does not exist"):
        g.connect("x.out", "zz.in")
    with pytest.raises(GraphError, match="already exists"):
        g.connect("x.out", "c.in")


def test_set_param_and_reset() -> None:
    g = small()
    log = record(g)
    old = g.set_param("c", "kernel_size", 3)
    assert old is None and g.node("c").params["kernel_size"] == 3
    assert log[0] == ("param_changed", g.node("c"), "kernel_size", None, 3)
    g.set_param("c", "kernel_size", None)  # None resets to the spec default
    assert "kernel_size" not in g.node("c").params
    assert names(log) == ["param_changed", "changed"] * 2


def test_move_emits_old_and_new_position() -> None:
    g = small()
    log = record(g)
    old = g.move("c", (5, 6))
    assert old == (100.0, 0.0)
    assert log[0] == ("node_moved", g.node("c"), (100.0, 0.0), (5.0, 6.0))


def test_insert_node_and_add_edge_at_an_index() -> None:
    g = small()
    g.insert_node(Node("n", "Conv"), 1)
    assert list(g.nodes) == ["x", "n", "c", "y"]
    e = Edge(PortRef("x", "out"), PortRef("n", "in"))
    g.add_edge(e, 0)
    assert g.edges[0] == e


def test_set_group_shares_the_project_groups_and_keeps_order() -> None:
    g = small()
    log = record(g)
    a, b = Graph("a"), Graph("b")
    g.set_group("a", a)
    g.set_group("b", b)
    assert a.groups is g.groups and b.groups is g.groups
    assert a.is_body() and not g.is_body()
    assert names(log) == ["group_changed", "changed"] * 2
    assert log[0] == ("group_changed", "a", None, a)
    g.set_group("a", None)
    g.set_group("a", a, 0)
    assert list(g.groups) == ["a", "b"]
    with pytest.raises(GraphError):
        g.set_group("self", g)
    own = Graph("own")
    own.groups["inner"] = Graph("inner")
    with pytest.raises(GraphError, match="project-wide"):
        g.set_group("own", own)


def test_ports_of_a_group_node_come_from_its_body_at_every_level() -> None:
    g = Graph()
    body = Graph("blk")
    body.add_node("GroupInput", "i", {"port": "in"})
    body.add_node("Activation", "a")
    body.add_node("GroupOutput", "o", {"port": "out"})
    g.set_group("blk", body)
    g.add_node("Group", "grp", {"group": "blk"})
    assert g.ports("grp") == (("in",), ("out",))
    # a Group node inside another body sees the same project groups
    outer = Graph("outer")
    g.set_group("outer", outer)
    outer.add_node("Group", "nested", {"group": "blk"})
    assert outer.ports("nested") == (("in",), ("out",))


def test_ports_of_unknown_types_are_empty() -> None:
    g = Graph()
    g.add_node("NoSuchType", "n")
    assert g.ports("n") == ((), ())


def test_check_connect_explains_why_not() -> None:
    g = Graph()
    g.add_node("Input", "x", {"shape": [3, 8]})
    g.add_node("Activation", "a")
    g.add_node("Activation", "b")
    assert g.check_connect(PortRef("x", "out"), PortRef("a", "in")) is None
    assert "no node" in (g.check_connect(PortRef("zz", "out"), PortRef("a", "in")) or "")
    assert "itself" in (g.check_connect(PortRef("a", "out"), PortRef("a", "in")) or "")
    assert "no output port" in (g.check_connect(PortRef("x", "nope"), PortRef("a", "in")) or "")
    assert "no input port" in (g.check_connect(PortRef("x", "out"), PortRef("a", "nope")) or "")
    g.connect("a.out", "b.in")
    assert "already connected" in (g.check_connect(PortRef("a", "out"), PortRef("b", "in")) or "")
    assert "cycle" in (g.check_connect(PortRef("b", "out"), PortRef("a", "in")) or "")


def test_port_ref_parse() -> None:
    assert PortRef.parse("a.out") == PortRef("a", "out")
    for bad in ("aout", ".out", "a.", 3):
        with pytest.raises(GraphError, match="node.port"):
            PortRef.parse(bad)  # type: ignore[arg-type]


def test_copy_is_deep_and_silent() -> None:
    g = small()
    body = Graph("blk")
    body.add_node("GroupInput", "i")
    g.set_group("blk", body)
    g.training = {"steps": 3, "opt": {"lr": 0.1}}
    log = record(g)
    c = g.copy()
    assert log == []
    assert list(c.nodes) == list(g.nodes) and c.edges == g.edges
    assert c.groups["blk"].groups is c.groups and c.groups["blk"] is not body
    c.node("x").params["shape"].append(99)
    c.training["opt"]["lr"] = 1.0
    assert g.node("x").params["shape"] == [3, 8] and g.training["opt"]["lr"] == 0.1
    assert body.copy().groups is g.groups  # a body's copy still belongs to its project


def test_edge_queries() -> None:
    g = small()
    assert [str(e) for e in g.edges_of("c")] == ["x.out -> c.in", "c.out -> y.in"]
    assert [str(e) for e in g.edges_into("c", "in")] == ["x.out -> c.in"]
    assert [str(e) for e in g.edges_from("c")] == ["c.out -> y.in"]
    assert len(g) == 3 and [n.id for n in g] == ["x", "c", "y"]
    with pytest.raises(GraphError, match="no node 'zz'"):
        g.node("zz")


def test_events_subscribe_once_and_survive_unsubscribing_while_emitting() -> None:
    from revstudio.core.events import Event

    ev = Event("e")
    calls: list[str] = []

    def first(x: int) -> None:
        calls.append(f"first {x}")
        ev.unsub(first)

    ev.sub(first)
    ev.sub(first)
    ev.sub(lambda x: calls.append(f"second {x}"))
    assert len(ev) == 2
    ev.emit(1)
    ev.emit(2)
    assert calls == ["first 1", "second 1", "second 2"]
    ev.unsub(first)  # not subscribed any more: no error
