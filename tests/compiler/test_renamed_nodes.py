"""Renaming a node (an undoable edit) renames its layer, and old checkpoints still load
through the recorded alias, in the compiled model and in the exported code."""
from __future__ import annotations

import importlib.util
import sys

import pytest
import torch

from revstudio.codegen.emit import generate
from revstudio.compiler.module import compile as compile_graph
from revstudio.core import project
from revstudio.core.commands import RenameNode
from revstudio.core.graph import Graph, GraphError


def small() -> Graph:
    g = Graph("small")
    g.add_node("Input", "x", {"shape": [4]}, (0, 0))
    g.add_node("Linear", "fc1", {"out_features": 3}, (200, 0))
    g.add_node("Activation", "act", {"fn": "tanh"}, (400, 0))
    g.add_node("Linear", "fc2", {"out_features": 2}, (600, 0))
    g.add_node("Output", "y", {}, (800, 0))
    for s, d in (("x.out", "fc1.in"), ("fc1.out", "act.in"), ("act.out", "fc2.in"), ("fc2.out", "y.in")):
        g.connect(s, d)
    return g


def test_rename_keeps_order_and_wires_and_undoes_exactly():
    g = small()
    before = project.dumps(g)
    cmd = RenameNode(g, "fc1", "encoder")
    cmd.do()
    assert list(g.nodes) == ["x", "encoder", "act", "fc2", "y"]
    assert [str(e) for e in g.edges][:2] == ["x.out -> encoder.in", "encoder.out -> act.in"]
    assert g.renamed == {"fc1": "encoder"}
    again = project.loads(project.dumps(g))
    assert again.renamed == {"fc1": "encoder"}
    cmd.undo()
    assert project.dumps(g) == before  # no "renamed" field in a file without renames


def test_renames_chain_and_a_rename_back_drops_the_alias():
    g = small()
    RenameNode(g, "fc1", "a").do()
    RenameNode(g, "a", "b").do()
    assert g.renamed == {"fc1": "b", "a": "b"}
    RenameNode(g, "b", "fc1").do()
    assert g.renamed == {"a": "fc1", "b": "fc1"}


def test_rename_refuses_a_taken_or_invalid_id():
    g = small()
    with pytest.raises(GraphError, match="already exists"):
        RenameNode(g, "fc1", "fc2").do()
    with pytest.raises(GraphError, match="not a valid node id"):
        RenameNode(g, "fc1", "has space").do()
    assert "fc1" in g.nodes


def test_compiled_model_loads_a_checkpoint_saved_before_the_rename():
    g = small()
    torch.manual_seed(0)
    old = compile_graph(g)
    saved = old.state_dict()
    assert "fc1.weight" in saved
    RenameNode(g, "fc1", "encoder").do()
    new = compile_graph(g)
    assert "encoder.weight" in new.state_dict()
    new.load_state_dict(saved, strict=True)
    x = torch.randn(5, 4)
    torch.testing.assert_close(new(x), old(x))


def test_exported_code_names_the_layer_after_the_node_and_loads_old_keys(tmp_path):
    g = small()
    torch.manual_seed(0)
    saved = compile_graph(g).state_dict()
    RenameNode(g, "fc1", "encoder").do()
    code = generate(g)
    assert "self.encoder = " in code and "self.fc1 = " not in code
    path = tmp_path / "exported_renamed.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location("exported_renamed", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["exported_renamed"] = module
    try:
        spec.loader.exec_module(module)
        model = module.Model()
        model.load_state_dict(saved, strict=True)
        torch.testing.assert_close(model.encoder.weight, saved["fc1.weight"])
    finally:
        sys.modules.pop("exported_renamed", None)
