"""Fuzzing the loader (only ProjectError, never a hang) and the checker (never raises).

Inputs: arbitrary JSON values, random text, documents with the right shape
but random contents, and valid files with random bytes cut, inserted or
changed. Structurally valid documents built from the catalog's types with
random params and edges must load and must survive ``check``.
"""
from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from revstudio.core.graph import Graph
from revstudio.core.project import ProjectError, dumps, loads

FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# A hang guard, not a speed test (machines are shared): no small input comes near
# it, and a loop that never ends still fails instead of stalling the suite.
SLOW = 30.0

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12), st.sampled_from(["in", "out", "x.out", "s.in", "revstudio", "Conv", "Group", ""]),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)

VALID = """{
  "format": "revstudio", "version": 1, "name": "v",
  "nodes": [
    {"id": "x", "type": "Input", "params": {"shape": [3, 8, 8]}, "pos": [0, 0]},
    {"id": "s", "type": "Split", "params": {"sections": 2}, "pos": [1, 2.5]},
    {"id": "f", "type": "Conv", "params": {"out_channels": 2, "padding": "same"}},
    {"id": "m", "type": "Merge", "params": {"mode": "add"}},
    {"id": "g", "type": "Group", "params": {"group": "blk"}},
    {"id": "y", "type": "Output"}
  ],
  "edges": [["x.out", "s.in"], ["s.out1", "f.in"], ["s.out0", "m.in0"], ["f.out", "m.in1"],
            ["m.out", "g.in"], ["g.out", "y.in"]],
  "groups": {"blk": {"nodes": [{"id": "i", "type": "GroupInput", "params": {"port": "in"}},
                               {"id": "a", "type": "Activation", "params": {"fn": "tanh"}},
                               {"id": "o", "type": "GroupOutput", "params": {"port": "out"}}],
                     "edges": [["i.out", "a.in"], ["a.out", "o.in"]]}},
  "training": {"steps": 3}, "view": {"zoom": 2}
}"""


def only_project_errors(text: str | bytes) -> Graph | None:
    """Load ``text``: a graph, or None after a ProjectError; anything else fails the test."""
    start = time.perf_counter()
    try:
        graph: Graph | None = loads(text)
    except ProjectError as exc:
        assert str(exc).startswith("<string>")
        graph = None
    assert time.perf_counter() - start < SLOW, f"the loader took over {SLOW:.0f} s: it hangs"
    if graph is not None:
        assert dumps(loads(dumps(graph))) == dumps(graph)
    return graph


def check_never_raises(graph: Graph) -> None:
    check = pytest.importorskip("revstudio.core.check").check
    start = time.perf_counter()
    report = check(graph)
    assert time.perf_counter() - start < SLOW, f"the checker took over {SLOW:.0f} s: it hangs"
    assert isinstance(report.valid, bool)
    json.dumps(report.to_json())


@FUZZ
@given(JSON)
def test_any_json_value(value: Any) -> None:
    only_project_errors(json.dumps(value))


@FUZZ
@given(st.text(max_size=200))
def test_any_text(text: str) -> None:
    only_project_errors(text)


@FUZZ
@given(st.binary(max_size=200))
def test_any_bytes(data: bytes) -> None:
    only_project_errors(data)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """The valid file with a few random cuts, insertions and replacements."""
    text = VALID
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["cut", "insert", "replace", "truncate"]))
        piece = draw(st.sampled_from(['"', ",", "[", "]", "{", "}", ":", "0", "-1", "null", ".", " ", "1e999",
                                      '"x"', "\\", "\x00", "\u2603", "NaN"]) | st.text(max_size=3))
        if kind == "cut":
            text = text[:at] + text[at + draw(st.integers(1, 20)):]
        elif kind == "insert":
            text = text[:at] + piece + text[at:]
        elif kind == "replace":
            text = text[:at] + piece + text[at + len(piece):]
        else:
            text = text[:at]
    return text


@FUZZ
@given(mutated())
def test_mutated_valid_files(text: str) -> None:
    graph = only_project_errors(text)
    if graph is not None:
        check_never_raises(graph)


@st.composite
def shaped_documents(draw: st.DrawFn) -> dict[str, Any]:
    """Documents of the right overall shape whose parts are random JSON."""
    doc: dict[str, Any] = {"format": "revstudio", "version": draw(st.sampled_from([0, 1, 1, 1, 2]) | JSON)}
    node = st.fixed_dictionaries(
        {"id": st.sampled_from(["a", "b", "c", "a.b", ""]) | JSON},
        optional={"type": st.sampled_from(["Conv", "Input", "Group", "Nope"]) | JSON, "params": JSON,
                  "pos": st.lists(SCALARS, max_size=3) | JSON},
    )
    edge = st.lists(st.sampled_from(["a.out", "b.in", "c.in0", "a", "zz.in", "b.out"]) | SCALARS, max_size=3)
    body = st.fixed_dictionaries({}, optional={"nodes": st.lists(node, max_size=3), "edges": st.lists(edge, max_size=3)})
    optional = {
        "name": JSON, "nodes": st.lists(node, max_size=4) | JSON, "edges": st.lists(edge, max_size=4) | JSON,
        "groups": st.dictionaries(st.sampled_from(["g", "h", "a b"]), body | JSON, max_size=2) | JSON,
        "training": JSON, "view": JSON,
    }
    for key, strategy in optional.items():
        if draw(st.integers(0, 9)):  # mostly present
            doc[key] = draw(strategy)
    return doc


@FUZZ
@given(shaped_documents())
def test_documents_with_random_parts(doc: dict[str, Any]) -> None:
    graph = only_project_errors(json.dumps(doc))
    if graph is not None:
        check_never_raises(graph)


def catalog_types() -> list[str]:
    from revstudio.core.spec import registry

    return sorted(spec.type_id for spec in registry) or ["Conv"]


PARAM_VALUES = st.one_of(
    st.integers(-2, 40), st.sampled_from([0, 1, 2, 3, 2**20 + 1, 10**12]),
    st.sampled_from(["same", "add", "sub", "mul", "mean", "max", "concat", "stack", "relu", "lstm", "gru",
                     "batch", "layer", "group", "instance", "max", "avg", "global_avg", "reverse", "shuffle",
                     "zeros", "float32", "blk", "in", "out", "", "nope"]),
    st.lists(st.integers(-1, 17), max_size=5), st.booleans(), st.floats(-2, 2, allow_nan=False), st.none(),
)
PARAM_NAMES = st.sampled_from([
    "shape", "dtype", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias", "init",
    "hidden_size", "cell", "num_layers", "out_features", "fn", "kind", "p", "sections", "dim", "inputs", "mode",
    "seed", "lu", "factor", "split", "f", "g", "net", "clamp", "group", "times", "port", "name", "unknown",
])
PORT_NAMES = st.sampled_from(["in", "out", "in0", "in1", "in2", "out0", "out1", "out2", "bogus"])


@st.composite
def graphs_from_the_catalog(draw: st.DrawFn) -> str:
    """Structurally valid files: catalog types, random params, random edges, random group bodies."""
    types = catalog_types()

    def part(prefix: str, size: int) -> dict[str, Any]:
        n = draw(st.integers(1, size))
        ids = [f"{prefix}{i}" for i in range(n)]
        nodes = [{"id": nid, "type": draw(st.sampled_from(types)),
                  "params": draw(st.dictionaries(PARAM_NAMES, PARAM_VALUES, max_size=4))} for nid in ids]
        pairs = draw(st.lists(st.tuples(st.sampled_from(ids), PORT_NAMES, st.sampled_from(ids), PORT_NAMES),
                              max_size=2 * n, unique=True))
        edges = [[f"{a}.{p}", f"{b}.{q}"] for a, p, b, q in pairs]
        return {"nodes": nodes, "edges": edges}

    doc = {"format": "revstudio", "version": 1, "name": "fuzz", **part("n", 8)}
    doc["groups"] = {name: part(name, 4) for name in draw(st.lists(st.sampled_from(["blk", "f", "g"]),
                                                                  unique=True, max_size=2))}
    return json.dumps(doc)


@FUZZ
@given(graphs_from_the_catalog())
def test_the_checker_never_raises_on_a_loaded_graph(text: str) -> None:
    graph = only_project_errors(text)
    assert graph is not None  # structurally valid by construction
    check_never_raises(graph)
