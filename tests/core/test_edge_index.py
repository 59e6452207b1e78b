"""Graph.edges indexes itself: answers match a plain scan after any list operation.

The index (edge counts, per-node adjacency in list order) must follow every
way of changing the list, including direct list edits that bypass the graph's
primitives, and building a graph with ``connect`` must be linear.
"""
from __future__ import annotations

import copy
import pickle
from functools import partial

from hypothesis import given, settings
from hypothesis import strategies as st
from scaling import NOT_QUADRATIC, growth

from revstudio.core.commands import UndoStack, remove_nodes
from revstudio.core.edge_index import EdgeList
from revstudio.core.graph import Edge, Graph, PortRef

NODES = ["a", "b", "c", "d"]
EDGES = st.builds(lambda s, sp, d, dp: Edge(PortRef(s, sp), PortRef(d, dp)),
                  st.sampled_from(NODES), st.sampled_from(["out", "out0"]),
                  st.sampled_from(NODES), st.sampled_from(["in", "in1"]))


def assert_index_matches(edges: EdgeList) -> None:
    plain = list(edges)
    for edge in set(plain):
        assert edge in edges and edges.count(edge) == plain.count(edge)
    for node in NODES:
        assert edges.touching(node) == [e for e in plain if node in (e.src.node, e.dst.node)]
    absent = Edge(PortRef("zz", "out"), PortRef("a", "in"))
    assert absent not in edges and edges.count(absent) == 0 and "a.out" not in edges and [] not in edges


OPS = st.one_of(
    st.tuples(st.just("append"), EDGES),
    st.tuples(st.just("insert"), st.integers(-3, 8), EDGES),
    st.tuples(st.just("remove"), st.integers(0, 7)),
    st.tuples(st.just("pop"), st.integers(0, 7)),
    st.tuples(st.just("extend"), st.lists(EDGES, max_size=3)),
    st.tuples(st.just("iadd"), st.lists(EDGES, max_size=3)),
    st.tuples(st.just("setitem"), st.integers(0, 7), EDGES),
    st.tuples(st.just("setslice"), st.integers(0, 4), st.lists(EDGES, max_size=3)),
    st.tuples(st.just("delitem"), st.integers(0, 7)),
    st.tuples(st.just("delslice"), st.integers(0, 4)),
    st.tuples(st.just("sort")), st.tuples(st.just("reverse")), st.tuples(st.just("clear")),
    st.tuples(st.just("imul"), st.integers(0, 2)),
    st.tuples(st.just("query")),  # builds the lazy adjacency between edits
)


def apply(edges: list[Edge], op: tuple) -> None:
    name, *args = op
    if name in ("remove", "pop", "setitem", "delitem") and not edges:
        return
    if name == "append":
        edges.append(args[0])
    elif name == "insert":
        edges.insert(args[0], args[1])
    elif name == "remove":
        edges.remove(edges[args[0] % len(edges)])
    elif name == "pop":
        edges.pop(args[0] % len(edges))
    elif name == "extend":
        edges.extend(iter(args[0]))
    elif name == "iadd":
        edges += args[0]
    elif name == "setitem":
        edges[args[0] % len(edges)] = args[1]
    elif name == "setslice":
        edges[args[0]:args[0] + 2] = args[1]
    elif name == "delitem":
        del edges[args[0] % len(edges)]
    elif name == "delslice":
        del edges[args[0]:args[0] + 2]
    elif name == "sort":
        edges.sort()
    elif name == "reverse":
        edges.reverse()
    elif name == "clear":
        edges.clear()
    elif name == "imul":
        edges *= args[0]
    elif name == "query" and isinstance(edges, EdgeList):
        edges.touching("a")


@settings(max_examples=200, deadline=None)
@given(st.lists(EDGES, max_size=5), st.lists(OPS, max_size=25))
def test_the_index_follows_every_list_operation(start: list[Edge], ops: list[tuple]) -> None:
    edges, plain = EdgeList(start), list(start)
    for op in ops:
        apply(edges, op)
        apply(plain, op)
        assert list(edges) == plain and isinstance(edges, EdgeList)
        assert_index_matches(edges)


def test_copies_and_pickles_carry_a_working_index() -> None:
    e1 = Edge(PortRef("a", "out"), PortRef("b", "in"))
    e2 = Edge(PortRef("b", "out"), PortRef("c", "in"))
    edges = EdgeList([e1, e2])
    edges.touching("b")
    for clone in (copy.copy(edges), copy.deepcopy(edges), pickle.loads(pickle.dumps(edges))):
        assert type(clone) is EdgeList and list(clone) == [e1, e2]
        clone.remove(e1)
        assert e1 not in clone and clone.touching("b") == [e2]
    assert list(edges) == [e1, e2] and edges.touching("b") == [e1, e2]


def small() -> Graph:
    g = Graph("g")
    g.add_node("Input", "x", {"shape": [4, 8, 8]})
    g.add_node("Split", "s")
    g.add_node("Merge", "m", {"mode": "add"})
    g.add_node("Output", "y")
    for src, dst in [("x.out", "s.in"), ("s.out0", "m.in0"), ("s.out1", "m.in1"), ("m.out", "y.in")]:
        g.connect(src, dst)
    return g


def test_graph_edges_stay_a_list_in_file_order_and_assigned_lists_are_indexed() -> None:
    g = small()
    assert isinstance(g.edges, list) and [str(e) for e in g.edges] == [
        "x.out -> s.in", "s.out0 -> m.in0", "s.out1 -> m.in1", "m.out -> y.in"]
    assert [str(e.dst) for e in g.edges_of("m")] == ["m.in0", "m.in1", "y.in"]
    g.edges = [e for e in g.edges if e.dst.node != "y"]  # code that assigns a plain list
    assert isinstance(g.edges, EdgeList) and g.edges_into("y") == []
    g.edges.append(Edge(PortRef("m", "out"), PortRef("y", "in")))  # and code that appends directly
    assert [str(e) for e in g.edges_into("y")] == ["m.out -> y.in"]
    assert g.check_connect(PortRef("m", "out"), PortRef("y", "in")) == "m.out is already connected to y.in"
    copied = g.copy()
    assert isinstance(copied.edges, EdgeList) and copied.edges == g.edges and copied.edges is not g.edges


def test_connect_refuses_duplicates_and_keeps_event_order() -> None:
    g = small()
    seen: list[str] = []
    for name in ("edge_added", "edge_removed", "node_removed", "changed"):
        getattr(g, name).sub(lambda *args, name=name: seen.append(name))
    g.connect("x.out", "y.in")
    assert seen == ["edge_added", "changed"]
    try:
        g.connect("x.out", "y.in")
    except ValueError as exc:
        assert "already exists" in str(exc)
    else:
        raise AssertionError("a duplicate edge was accepted")
    seen.clear()
    g.remove_node("m")
    assert seen == ["edge_removed", "changed"] * 3 + ["node_removed", "changed"]
    assert [str(e) for e in g.edges] == ["x.out -> s.in", "x.out -> y.in"] and g.edges_of("m") == []


def test_undo_restores_edge_order_and_index() -> None:
    g = small()
    before = list(g.edges)
    stack = UndoStack()
    stack.push(remove_nodes(g, ["s"]))
    assert g.edges_of("s") == [] and [str(e) for e in g.edges] == ["m.out -> y.in"]
    stack.undo()
    assert list(g.edges) == before
    assert [str(e) for e in g.edges_of("s")] == ["x.out -> s.in", "s.out0 -> m.in0", "s.out1 -> m.in1"]
    assert g.check_connect(PortRef("m", "out"), PortRef("s", "in")) == "connecting m.out to s.in would make a cycle"


def chain_by_connect(n: int) -> Graph:
    g = Graph("chain")
    g.add_node("Input", "x", {"shape": [4]})
    prev = "x"
    for i in range(n):
        g.add_node("Activation", f"a{i}")
        g.connect(f"{prev}.out", f"a{i}.in")
        prev = f"a{i}"
    return g


def test_building_a_large_graph_with_connect_is_linear() -> None:
    assert len(chain_by_connect(20_000).edges) == 20_000
    ratio = growth(lambda n: partial(chain_by_connect, n), 1_000)
    assert ratio < NOT_QUADRATIC, f"connecting 4x the edges took {ratio:.1f}x as long"


def _quadratic(n: int) -> int:
    return sum(1 for i in range(n) for j in range(n) if i == j)


def test_the_growth_check_can_tell_quadratic_from_linear() -> None:
    assert growth(lambda n: partial(_quadratic, n), 300, tries=1) > NOT_QUADRATIC  # one honest reading
    assert growth(lambda n: partial(sum, range(n)), 1_000_000) < NOT_QUADRATIC  # ~10 ms: above timer noise
