"""Project files: byte-identical round trips, versions, bad input, embedded exports, atomic saves."""
from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from scaling import NOT_QUADRATIC, growth

from revstudio.core import project
from revstudio.core.graph import Edge, Graph, PortRef
from revstudio.core.project import (
    CURRENT_VERSION,
    MIGRATIONS,
    ProjectError,
    dumps,
    load,
    loads,
    migrate_0_to_1,
    save,
)

DESIGN_EXAMPLE = """{
  "format": "revstudio",
  "version": 1,
  "name": "revnet-tiny",
  "nodes": [
    {"id": "x", "type": "Input", "params": {"shape": [8, 16, 16]}, "pos": [0, 0]},
    {"id": "s", "type": "Split", "params": {"sections": 2}},
    {"id": "f", "type": "Conv", "params": {"out_channels": 4, "kernel_size": 3, "padding": "same"}},
    {"id": "m", "type": "Merge", "params": {"mode": "add"}},
    {"id": "c", "type": "Concat", "params": {}},
    {"id": "y", "type": "Output", "params": {}}
  ],
  "edges": [
    ["x.out", "s.in"], ["s.out1", "f.in"], ["s.out0", "m.in0"],
    ["f.out", "m.in1"], ["m.out", "c.in0"], ["s.out1", "c.in1"],
    ["c.out", "y.in"]
  ],
  "groups": {},
  "training": {},
  "view": {}
}"""


def full_graph() -> Graph:
    """A document with everything: groups, training, view, odd names, floats."""
    g = loads(DESIGN_EXAMPLE)
    g.name = 'quotes " and \\ and ünïcode ☃'
    body = Graph("blk")
    body.add_node("GroupInput", "i", {"port": "in"}, pos=(-100, 0))
    body.add_node("Conv", "conv", {"out_channels": 4, "kernel_size": 1}, pos=(0.25, -3.5))
    body.add_node("GroupOutput", "o", {"port": "out"}, pos=(100, 0))
    body.connect("i.out", "conv.in")
    body.connect("conv.out", "o.in")
    g.set_group("blk", body)
    g.set_group("another", Graph("another"))
    g.add_node("Group", "g1", {"group": "blk"}, pos=(1e-3, 123456789.125))
    g.training = {"optimizer": {"name": "adam", "lr": 1e-3}, "steps": 100, "data": "synthetic:mnist"}
    g.view = {"zoom": 1.5, "pan": [10, -20]}
    return g


def test_the_design_example_loads_as_written() -> None:
    g = loads(DESIGN_EXAMPLE)
    assert g.name == "revnet-tiny"
    assert list(g.nodes) == ["x", "s", "f", "m", "c", "y"]
    assert [str(e) for e in g.edges][:2] == ["x.out -> s.in", "s.out1 -> f.in"]
    assert g.node("f").params == {"out_channels": 4, "kernel_size": 3, "padding": "same"}
    assert g.node("x").pos == (0.0, 0.0)


def test_save_load_save_is_byte_identical(tmp_path: Path) -> None:
    g = full_graph()
    path = tmp_path / "model.revs"
    save(g, path)
    first = path.read_bytes()
    again = load(path)
    save(again, path)
    assert path.read_bytes() == first
    assert dumps(again) == dumps(g) == first.decode("ascii")
    assert list(again.groups) == ["another", "blk"]  # groups are written sorted by name
    assert again.groups["blk"].groups is again.groups
    assert again.node("g1").pos == (1e-3, 123456789.125)
    assert again.training == g.training and again.view == g.view and again.name == g.name


def test_dumps_writes_only_set_params_sorted_one_node_per_line() -> None:
    g = Graph("t")
    g.add_node("Conv", "c", {"padding": "same", "out_channels": 4}, pos=(1.5, 2))
    text = dumps(g)
    assert '{"id": "c", "type": "Conv", "params": {"out_channels": 4, "padding": "same"}, "pos": [1.5, 2]}' in text
    assert text.endswith("}\n") and text.isascii()
    assert json.loads(text)["version"] == CURRENT_VERSION


def test_null_params_mean_default_and_are_dropped() -> None:
    doc = json.loads(DESIGN_EXAMPLE)
    doc["nodes"][2]["params"]["stride"] = None
    assert "stride" not in loads(json.dumps(doc)).node("f").params


def test_dumps_refuses_values_json_cannot_hold() -> None:
    g = Graph()
    g.add_node("Conv", "c", {"weird": {1, 2}})
    with pytest.raises(ProjectError, match="node 'c'.*cannot be saved"):
        dumps(g)
    g = Graph()
    g.add_node("Conv", "c")
    g.node("c").pos = (float("nan"), 0.0)
    with pytest.raises(ProjectError, match="not a finite number"):
        dumps(g)
    g.node("c").pos = (0.0, -1e13)  # the reader refuses it, so a saved file would not reopen
    with pytest.raises(ProjectError, match="off the canvas"):
        dumps(g)


# ---- bad input: structural problems are ProjectErrors naming the place --------------------

def doc_with(**changes: Any) -> str:
    doc = json.loads(DESIGN_EXAMPLE)
    for key, value in changes.items():
        if value is ...:
            del doc[key]
        else:
            doc[key] = value
    return json.dumps(doc)


def node_change(index: int, **changes: Any) -> str:
    doc = json.loads(DESIGN_EXAMPLE)
    for key, value in changes.items():
        if value is ...:
            del doc["nodes"][index][key]
        else:
            doc["nodes"][index][key] = value
    return json.dumps(doc)


def with_edges(*edges: Any) -> str:
    return doc_with(edges=[["x.out", "s.in"], *edges])


BODY = {"nodes": [{"id": "i", "type": "GroupInput"}], "edges": []}

BAD = {
    "empty": ("", "the file is empty"),
    "malformed": ('{"format": "revstudio",, }', "line 1, column 24: Expecting property name"),
    "truncated": (DESIGN_EXAMPLE[:300], "truncated"),
    "not an object": ("[1, 2]", "not a revstudio project"),
    "other format": ('{"format": "other", "version": 1}', "not a revstudio project"),
    "NaN": (DESIGN_EXAMPLE.replace('"pos": [0, 0]', '"pos": [NaN, 0]'), "NaN is not a number JSON allows"),
    "overflowing float": (DESIGN_EXAMPLE.replace('"pos": [0, 0]', '"pos": [1e999, 0]'), "too large"),
    "huge integer": (DESIGN_EXAMPLE.replace('"sections": 2', '"sections": ' + "9" * 5000),
                     r"has 5,000 digits; no project value needs more than 1,000$"),
    "huge negative integer": (DESIGN_EXAMPLE.replace('"sections": 2', '"sections": -' + "9" * 1001),
                              "has 1,001 digits"),
    "duplicate key": (DESIGN_EXAMPLE.replace('"id": "x",', '"id": "x", "id": "z",'), "'id' appears twice"),
    "deep JSON": ('{"format": "revstudio", "a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nest too deeply"),
    "version missing": (doc_with(version=...), "top level: the field 'version' is missing; a project file "
                                               'written now has "version": 1'),
    "version text": (doc_with(version="1"), "field 'version': expected a whole number"),
    "version bool": (doc_with(version=True), "field 'version'"),
    "newer version": (doc_with(version=7), r"made by a newer revstudio \(file version 7, this revstudio reads "
                                           r"up to 1\): upgrade revstudio"),
    "negative version": (doc_with(version=-1), "unknown file version -1"),
    "huge version": (doc_with(version=10 ** 900), r"made by a newer revstudio \(file version 100000000000000000000\.\.\., "),
    "unknown top field": (doc_with(colour="red"), "top level: unknown field 'colour'"),
    "nodes missing": (doc_with(nodes=...), "the field 'nodes' is missing"),
    "edges missing": (doc_with(edges=...), "the field 'edges' is missing"),
    "nodes not a list": (doc_with(nodes={"x": {}}), "field 'nodes': expected a list of nodes, got an object"),
    "name not text": (doc_with(name=3), "field 'name'"),
    "node not an object": (doc_with(nodes=["x"]), "node 0: expected an object"),
    "node without id": (node_change(1, id=...), "node 1: the field 'id' is missing"),
    "id with a dot": (node_change(1, id="a.b"), "node 1: id 'a.b' is not allowed"),
    "id a number": (node_change(1, id=5), "node 1: id 5 is not allowed"),
    "id too long": (node_change(1, id="n" * 65), "node 1: id 'nnn"),
    "node without type": (node_change(2, type=...), "node 2 'f': the field 'type' is missing"),
    "type a number": (node_change(2, type=3), "node 2 'f': 'type' must be a node type name"),
    "params a list": (node_change(2, params=[1]), "node 2 'f': 'params' must be an object"),
    "pos one number": (node_change(0, pos=[1]), "node 0 'x': 'pos' must be two numbers"),
    "pos text": (node_change(0, pos=["a", 1]), "node 0 'x': 'pos' must be two numbers"),
    "pos bool": (node_change(0, pos=[True, 1]), "'pos' must be two numbers"),
    "pos off the canvas": (node_change(0, pos=[1e30, 0]), "node 0 'x': 'pos' .* is off the canvas"),
    "unknown node field": (node_change(0, colour="red"), "node 0 'x': unknown field 'colour'"),
    "deep param": (node_change(2, params={"k": json.loads("[" * 40 + "]" * 40)}),
                   "node 2 'f' param 'k': nests deeper than 32"),
    "duplicate ids": (node_change(3, id="s"), "node 3 's': the id is already used by node 1"),
    "edge one string": (with_edges("s.out0"), r"edge 1 's.out0': expected two port references"),
    "edge three parts": (with_edges(["a.out", "b.in", "c.in"]), "edge 1 .*expected two port references"),
    "edge as object": (with_edges({"from": "x.out", "to": "s.in"}), "edge 1 an object with 2 fields"),
    "edge half an object": (with_edges({"from": "x.out"}), "edge 1 an object with 1 field:"),
    "edge numbers": (with_edges([1, 2]), r"edge 1 \[1, 2\]: expected two port references"),
    "edge without port": (with_edges(["x", "s.in"]), r"edge 1 \['x', 's.in'\]: 'x' is not a port reference"),
    "edge empty port": (with_edges(["x.", "s.in"]), "is not a port reference"),
    "dangling edge": (with_edges(["s.out0", "zz.in"]),
                      r"<string>: edge 1 \['s.out0', 'zz.in'\]: there is no node 'zz'; remove the edge or add the node"),
    "duplicate edge": (with_edges(["x.out", "s.in"]), "edge 1 .*the same edge as edge 0"),
    "groups a list": (doc_with(groups=[BODY]), "field 'groups': expected an object"),
    "group not an object": (doc_with(groups={"g": []}), "group 'g': expected an object"),
    "group bad name": (doc_with(groups={"a b": BODY}), "group 'a b': a group name has"),
    "group without edges": (doc_with(groups={"g": {"nodes": []}}), "group 'g': the field 'edges' is missing"),
    "group extra field": (doc_with(groups={"g": {**BODY, "view": {}}}), "group 'g': unknown field 'view'"),
    "group dangling edge": (doc_with(groups={"g": {**BODY, "edges": [["i.out", "q.in"]]}}),
                            r"group 'g': edge 0 \['i.out', 'q.in'\]: there is no node 'q'"),
    "group duplicate id": (doc_with(groups={"g": {"nodes": [{"id": "i", "type": "A"}] * 2, "edges": []}}),
                           "group 'g': node 1 'i': the id is already used"),
    "training a list": (doc_with(training=[]), "field 'training': expected an object, got a list"),
    "view text": (doc_with(view="zoomed"), "field 'view': expected an object, got text"),
    "deep view": (doc_with(view=json.loads('{"a":' * 40 + "1" + "}" * 40)), "field 'view': nests deeper"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_files_raise_project_errors_naming_the_place(case: str) -> None:
    text, message = BAD[case]
    with pytest.raises(ProjectError, match=message) as info:
        loads(text)
    assert str(info.value).startswith("<string>")
    assert len(str(info.value)) < 400


def test_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "model.revs"
    path.write_text(with_edges(["a.out", "zz.in"]))
    with pytest.raises(ProjectError) as info:
        load(path)
    assert str(info.value) == f"{path}: edge 1 ['a.out', 'zz.in']: there is no node 'a'; remove the edge or add the node"
    assert info.value.source == str(path) and info.value.where.startswith("edge 1")
    assert isinstance(info.value, ValueError)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match="missing.revs: cannot read the file"):
        load(tmp_path / "missing.revs")
    with pytest.raises(ProjectError, match="is a folder, not a project file; give the .revs file"):
        load(tmp_path)
    binary = tmp_path / "b.revs"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ProjectError, match="not UTF-8 text"):
        load(binary)
    with pytest.raises(ProjectError, match="not UTF-8"):
        loads(b"\xff")
    with pytest.raises(ProjectError, match="expected JSON text"):
        loads(3)  # type: ignore[arg-type]


def test_a_byte_order_mark_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "bom.revs"
    path.write_bytes(b"\xef\xbb\xbf" + DESIGN_EXAMPLE.encode())
    assert len(load(path)) == 6


def test_too_large_files_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(project, "MAX_FILE_BYTES", 100)
    path = tmp_path / "big.revs"
    path.write_text(DESIGN_EXAMPLE)
    with pytest.raises(ProjectError, match="larger than"):
        load(path)


# ---- semantic problems load, and the checker flags them -----------------------------------

SEMANTIC = {
    "unknown type": ({"id": "q", "type": "Convolution"}, "q"),
    "unknown param": ({"id": "q", "type": "Conv", "params": {"out_channels": 4, "colour": "red"}}, "q"),
    "negative size": ({"id": "q", "type": "Input", "params": {"shape": [-3, 16]}}, "q"),
    "absurd size": ({"id": "q", "type": "Input", "params": {"shape": [10**12, 10**12]}}, "q"),
    "wrong value type": ({"id": "q", "type": "Conv", "params": {"out_channels": "four"}}, "q"),
    "missing group": ({"id": "q", "type": "Group", "params": {"group": "nowhere"}}, "q"),
}


@pytest.mark.parametrize("case", sorted(SEMANTIC))
def test_semantic_problems_are_kept_for_the_checker(case: str) -> None:
    node, flagged = SEMANTIC[case]
    doc = json.loads(DESIGN_EXAMPLE)
    doc["nodes"].append(node)
    g = loads(json.dumps(doc))
    assert g.node("q").params == node.get("params", {})  # kept exactly as written
    assert dumps(loads(dumps(g))) == dumps(g)
    check = pytest.importorskip("revstudio.core.check").check
    report = check(g)
    assert any(d.severity == "error" and d.node == flagged for d in report.diagnostics), report.diagnostics


def test_two_edges_into_one_input_load_and_are_flagged() -> None:
    g = loads(with_edges(["x.out", "m.in0"], ["f.out", "m.in0"]))
    assert len(g.edges_into("m", "in0")) == 2
    check = pytest.importorskip("revstudio.core.check").check
    assert any(d.node == "m" and d.port == "in0" for d in check(g).diagnostics)


def test_legacy_type_ids_become_current(monkeypatch: pytest.MonkeyPatch) -> None:
    from revstudio.core.spec import registry

    assert registry.find("Conv") is not None  # the catalog is loaded
    monkeypatch.setitem(registry._legacy, "Convolution2D", "Conv")
    g = loads(node_change(2, type="Convolution2D"))
    assert g.node("f").type == "Conv"
    assert loads(node_change(2, type="NotAType")).node("f").type == "NotAType"


# ---- versions -------------------------------------------------------------------------------

V0 = {
    "format": "revstudio", "version": 0, "name": "draft",
    "nodes": [{"id": "x", "type": "Input", "params": {"shape": [3, 8]}, "pos": {"x": 10, "y": -5}},
              {"id": "a", "type": "Activation"}],
    "edges": [{"from": "x.out", "to": "a.in"}],
    "groups": {"g": {"nodes": [{"id": "i", "type": "GroupInput", "pos": {"x": 1.5, "y": 2}},
                               {"id": "o", "type": "GroupOutput"}],
                     "edges": [{"from": "i.out", "to": "o.in"}]}},
}


def test_every_old_version_has_one_migration_step() -> None:
    assert sorted(MIGRATIONS) == list(range(min(MIGRATIONS), CURRENT_VERSION))


def test_migrate_0_to_1() -> None:
    doc = migrate_0_to_1(json.loads(json.dumps(V0)))
    assert doc["version"] == 1
    assert doc["nodes"][0]["pos"] == [10, -5] and "pos" not in doc["nodes"][1]
    assert doc["edges"] == [["x.out", "a.in"]]
    assert doc["groups"]["g"]["nodes"][0]["pos"] == [1.5, 2]
    assert doc["groups"]["g"]["edges"] == [["i.out", "o.in"]]


def test_a_version_0_file_loads_and_saves_as_version_1() -> None:
    g = loads(json.dumps(V0))
    assert g.node("x").pos == (10.0, -5.0)
    assert [str(e) for e in g.edges] == ["x.out -> a.in"]
    assert [str(e) for e in g.groups["g"].edges] == ["i.out -> o.in"]
    saved = json.loads(dumps(g))
    assert saved["version"] == 1 and saved["edges"] == [["x.out", "a.in"]]


def test_a_malformed_version_0_file_is_still_a_project_error() -> None:
    bad = {**V0, "edges": [{"from": "x.out"}], "nodes": [{"id": "x", "type": "A", "pos": {"x": 1}}]}
    with pytest.raises(ProjectError, match="node 0 'x': 'pos' must be two numbers"):
        loads(json.dumps(bad))
    with pytest.raises(ProjectError, match="edge 0 an object"):
        loads(json.dumps({**V0, "edges": [{"from": "x.out"}]}))
    with pytest.raises(ProjectError, match="field 'groups'"):
        loads(json.dumps({**V0, "groups": [1]}))


# ---- size -------------------------------------------------------------------------------------

def big_text(n: int) -> str:
    g = Graph("big")
    g.add_node("Input", "x", {"shape": [8, 16, 16]})
    prev = "x"
    for i in range(n - 1):
        nid = f"n{i}"
        g.add_node("Conv", nid, {"out_channels": 8, "kernel_size": 3, "padding": "same"}, pos=(i * 10.5, i % 7))
        g.edges.append(Edge(PortRef(prev, "out"), PortRef(nid, "in")))
        prev = nid
    return dumps(g)


def test_ten_thousand_nodes_load_and_round_trip() -> None:
    text = big_text(10_000)
    g = loads(text)
    assert len(g) == 10_000 and len(g.edges) == 9_999
    assert dumps(g) == text


def test_loading_and_saving_are_linear_in_the_number_of_nodes() -> None:
    # 4x the nodes must cost about 4x, not 16x; absolute speed is benchmarks/bench_check.py's job
    load_ratio = growth(lambda n: partial(loads, big_text(n)), 1_000)
    assert load_ratio < NOT_QUADRATIC, f"loading 4x the nodes took {load_ratio:.1f}x as long"
    dump_ratio = growth(lambda n: partial(dumps, loads(big_text(n))), 1_000)
    assert dump_ratio < NOT_QUADRATIC, f"saving 4x the nodes took {dump_ratio:.1f}x as long"
