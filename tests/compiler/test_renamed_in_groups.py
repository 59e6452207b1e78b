"""Renaming a node inside a group body (at any depth), or the group node itself, keeps old
checkpoints loading: each body records its own renames (saved in the project file), and
the compiled model and the exported code move old keys to the new layer names."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

from revstudio.codegen.emit import generate
from revstudio.compiler.module import compile as compile_graph
from revstudio.core import project
from revstudio.core.commands import RenameNode
from revstudio.core.graph import Graph
from revstudio.core.grouping import group_nodes


def nested() -> Graph:
    """x -> [outer: fc1 -> act -> [inner: fc2 -> fc3]] -> y; the groups are made by Ctrl+G's code."""
    g = Graph("nested")
    g.add_node("Input", "x", {"shape": [4]}, (0, 0))
    g.add_node("Linear", "fc1", {"out_features": 5}, (200, 0))
    g.add_node("Activation", "act", {"fn": "tanh"}, (400, 0))
    g.add_node("Linear", "fc2", {"out_features": 6}, (600, 0))
    g.add_node("Linear", "fc3", {"out_features": 3}, (800, 0))
    g.add_node("Output", "y", {}, (1000, 0))
    for s, d in (("x.out", "fc1.in"), ("fc1.out", "act.in"), ("act.out", "fc2.in"),
                 ("fc2.out", "fc3.in"), ("fc3.out", "y.in")):
        g.connect(s, d)
    group_nodes(g, ["fc1", "act", "fc2", "fc3"], name="block", group_name="outer").do()
    body = g.groups["outer"]
    group_nodes(body, ["fc2", "fc3"], name="tail", group_name="inner", project=g).do()
    return g


def saved_weights(g: Graph) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    model = compile_graph(g)
    x = torch.randn(2, 4)
    return model.state_dict(), x, model(x)


def exported(g: Graph, tmp_path: Path, name: str) -> torch.nn.Module:
    path = tmp_path / f"{name}.py"
    path.write_text(generate(g))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        return module.Model()
    finally:
        sys.modules.pop(name, None)


def loads_old_weights(g: Graph, saved: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                      tmp_path: Path, name: str) -> None:
    """The checkpoint loads strictly into the compiled model and the exported code, with the same result."""
    model = compile_graph(g)
    model.load_state_dict(saved, strict=True)
    torch.testing.assert_close(model(x), y)
    code_model = exported(g, tmp_path, name)
    code_model.load_state_dict(saved, strict=True)
    code_model.mode = "standard"
    torch.testing.assert_close(code_model(x), y)


def test_the_fixture_nests_two_groups():
    g = nested()
    keys = set(compile_graph(g).state_dict())
    assert {"block.body.fc1.weight", "block.body.tail.body.fc2.weight", "block.body.tail.body.fc3.bias"} <= keys


def test_rename_in_a_body_records_the_alias_there_and_renames_the_layer(tmp_path):
    g = nested()
    saved, x, y = saved_weights(g)
    body = g.groups["outer"]
    RenameNode(body, "fc1", "encoder").do()
    assert body.renamed == {"fc1": "encoder"} and g.renamed == {}
    assert "block.body.encoder.weight" in compile_graph(g).state_dict()
    code = generate(g)
    assert "self.encoder = " in code and "self.fc1 = " not in code
    loads_old_weights(g, saved, x, y, tmp_path, "exported_body_rename")


def test_rename_two_levels_down_loads_old_checkpoints(tmp_path):
    g = nested()
    saved, x, y = saved_weights(g)
    RenameNode(g.groups["inner"], "fc3", "head").do()
    keys = set(compile_graph(g).state_dict())
    assert "block.body.tail.body.head.weight" in keys and "block.body.tail.body.fc3.weight" not in keys
    loads_old_weights(g, saved, x, y, tmp_path, "exported_deep_rename")


def test_renaming_group_nodes_at_the_top_and_inside_a_body(tmp_path):
    g = nested()
    saved, x, y = saved_weights(g)
    RenameNode(g, "block", "trunk").do()                     # the outer Group node
    RenameNode(g.groups["outer"], "tail", "classifier").do()  # the inner Group node, in the outer body
    RenameNode(g.groups["inner"], "fc2", "hidden").do()       # and a layer below it
    keys = set(compile_graph(g).state_dict())
    assert "trunk.body.classifier.body.hidden.weight" in keys
    loads_old_weights(g, saved, x, y, tmp_path, "exported_group_rename")


def test_undo_and_redo_of_a_body_rename(tmp_path):
    g = nested()
    saved, x, y = saved_weights(g)
    before = project.dumps(g)
    body = g.groups["inner"]
    cmd = RenameNode(body, "fc2", "hidden")
    cmd.do()
    cmd.undo()
    assert body.renamed == {} and "fc2" in body.nodes
    assert project.dumps(g) == before  # no "renamed" written for a body without renames
    loads_old_weights(g, saved, x, y, tmp_path, "exported_undone")
    cmd.do()  # redo
    assert body.renamed == {"fc2": "hidden"}
    assert "block.body.tail.body.hidden.weight" in compile_graph(g).state_dict()
    loads_old_weights(g, saved, x, y, tmp_path, "exported_redone")


def test_rename_then_rename_back_inside_a_body(tmp_path):
    g = nested()
    saved, x, y = saved_weights(g)
    body = g.groups["outer"]
    RenameNode(body, "fc1", "encoder").do()
    saved_between = compile_graph(g).state_dict()  # a checkpoint taken under the new name
    RenameNode(body, "encoder", "fc1").do()
    assert body.renamed == {"encoder": "fc1"}
    assert "block.body.fc1.weight" in compile_graph(g).state_dict()
    loads_old_weights(g, saved, x, y, tmp_path, "exported_back")
    model = compile_graph(g)
    model.load_state_dict(saved_between, strict=True)
    torch.testing.assert_close(model.block.body.fc1.weight, saved_between["block.body.encoder.weight"])


def test_body_renames_survive_saving_and_copying():
    g = nested()
    RenameNode(g.groups["outer"], "fc1", "encoder").do()
    RenameNode(g.groups["inner"], "fc2", "hidden").do()
    text = project.dumps(g)
    assert '"renamed": {\n        "fc1": "encoder"\n      }' in text
    again = project.loads(text)
    assert again.groups["outer"].renamed == {"fc1": "encoder"}
    assert again.groups["inner"].renamed == {"fc2": "hidden"}
    assert again.renamed == {}
    assert project.dumps(again) == text
    copied = g.copy()
    assert copied.groups["inner"].renamed == {"fc2": "hidden"}
    assert copied.groups["inner"].renamed is not g.groups["inner"].renamed


def test_a_bad_body_renamed_field_names_the_group():
    text = project.dumps(nested()).replace('"name": "nested"', '"name": "bad"')
    broken = text.replace('"outer": {\n', '"outer": {\n      "renamed": {"a": 3},\n', 1)
    try:
        project.loads(broken, "bad.revs")
    except project.ProjectError as exc:
        assert "group 'outer'" in str(exc) and "renamed" in str(exc)
    else:
        raise AssertionError("a body's renamed map with a number was accepted")


def test_a_node_added_under_a_freed_id_keeps_its_own_weights():
    """fc1 renamed to encoder, then a new node takes the id fc1: a checkpoint of that model
    must load as saved, not have fc1's keys moved onto encoder."""
    g = nested()
    body = g.groups["outer"]
    RenameNode(body, "fc1", "encoder").do()
    RenameNode(g, "block", "trunk").do()
    g.add_node("Linear", "block", {"out_features": 3}, (1200, 0))  # the freed top-level id
    g.remove_edge(next(e for e in g.edges if e.dst.node == "y"))
    g.connect("trunk.out", "block.in")
    g.connect("block.out", "y.in")
    model = compile_graph(g)
    saved = model.state_dict()
    assert "block.weight" in saved and "trunk.body.encoder.weight" in saved
    again = compile_graph(g)
    again.load_state_dict(saved, strict=True)
    torch.testing.assert_close(again.block.weight, saved["block.weight"])
