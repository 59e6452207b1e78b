"""The lowered plan: closed op set, naming namespace, stable state_dict prefixes, errors."""
from __future__ import annotations

import keyword

import pytest
from compiler_graphs import coupling_repeat, nested_quarter, wired_revnet

from revstudio.compiler.plan import (
    RESERVED,
    CompileError,
    CouplingOp,
    InputOp,
    Namespace,
    NodeOp,
    OutputOp,
    RegionOp,
    lower,
    module_name,
)
from revstudio.core.graph import Graph

OP_TYPES = (InputOp, NodeOp, CouplingOp, RegionOp, OutputOp)


@pytest.mark.parametrize("node_id", ["conv1", "f", "block_3", "Conv"])
def test_plain_identifiers_keep_their_name(node_id: str) -> None:
    assert module_name(node_id) == node_id


@pytest.mark.parametrize("node_id", [
    "class", "print", "forward", "training", "state_dict", "_hidden", "3conv", "a-b", "a b", "é",
    "x'); import os; os.system('rm -rf /')  #", '"""', "\\", "conv_deadbeef", "mode",
])
def test_hostile_ids_become_legal_unique_names(node_id: str) -> None:
    name = module_name(node_id)
    assert name.isidentifier() and name.isascii()
    assert not keyword.iskeyword(name) and name not in RESERVED
    assert "." not in name and name != node_id
    assert module_name(node_id) == name  # stable


def test_similar_ids_never_collide() -> None:
    ids = ["a-b", "a_b", "a b", "a.b", "a__b", "a-b-", "-a-b"]
    names = [module_name(i) for i in ids]
    assert len(set(names)) == len(names)


def test_namespace_makes_unique_legal_values() -> None:
    ns = Namespace()
    got = [ns.create(c) for c in ["x_out", "x_out", "in", "1abc", "for", ""]]
    assert len(set(got)) == len(got)
    assert all(n.isidentifier() and not keyword.iskeyword(n) for n in got)


def test_plan_is_a_closed_set_of_ops_in_topological_order() -> None:
    plan = lower(wired_revnet(2))
    assert all(isinstance(op, OP_TYPES) for op in plan.ops)
    assert [op.kind for op in plan.ops] == ["input", "region", "output"]
    region = plan.ops[1]
    assert isinstance(region, RegionOp)
    kinds = [s.kind for s in region.steps]
    assert kinds.count("coupling") == 4 and kinds.count("node") == 4  # 2 x (split, concat)
    defined = {plan.ops[0].output}
    for step in region.steps:  # every value is defined before it is read
        reads = (step.a, *step.b) if isinstance(step, CouplingOp) else step.inputs
        assert set(reads) <= defined
        defined |= {step.output} if isinstance(step, CouplingOp) else set(step.outputs)
    coupling = next(s for s in region.steps if isinstance(s, CouplingOp))
    assert [n.type for n in coupling.body] == ["Conv", "Activation"]
    assert coupling.sign == 1


def test_values_and_modules_are_named_from_node_ids() -> None:
    g = wired_revnet(1)
    plan = lower(g)
    assert plan.values["b0s.out1"] == "b0s_out1"
    assert plan.modules["b0f"] == "b0f"
    assert all(v.isidentifier() for v in plan.values.values())


def test_editing_one_node_never_renames_another() -> None:
    g = wired_revnet(2)
    before = lower(g).modules
    g2 = wired_revnet(2)
    g2.add_node("Conv", "a-b", {"out_channels": 4, "kernel_size": 1})  # an extra, oddly named node
    g2.add_node("Output", "y2")
    g2.connect("b1c.out", "a-b.in")
    g2.connect("a-b.out", "y2.in")
    after = lower(g2).modules
    assert all(after[k] == v for k, v in before.items())


def test_group_bodies_are_lowered_once_per_shape() -> None:
    plan = lower(coupling_repeat(3))
    rep = plan.node_ops()[0]
    assert rep.type == "Repeat" and set(rep.bodies) == {"group"}
    body = plan.groups[rep.bodies["group"]]
    assert body.invertible
    coupling = body.node_ops()[0]
    assert coupling.type == "AdditiveCoupling" and set(coupling.bodies) == {"f", "g"}


def test_free_list_never_holds_caller_tensors() -> None:
    plan = lower(nested_quarter())
    region = next(op for op in plan.ops if isinstance(op, RegionOp))
    assert region.inputs == ("x_out",) and region.free == ()


def test_invalid_graph_raises_compile_error_naming_the_node() -> None:
    g = Graph("broken")
    g.add_node("Input", "x", {"shape": [4, 8]})
    g.add_node("Linear", "fc", {"out_features": 2})
    g.add_node("Output", "y")
    g.connect("fc.out", "y.in")  # fc.in is not connected
    with pytest.raises(CompileError, match="fc"):
        lower(g)
