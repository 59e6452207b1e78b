"""The compiler reads what a node type is from its one declaration (``NodeSpec``): whether it
only moves values around, how many computing steps the runtime makes of it, and whether autograd
keeps its output. A plugin's type declares the same facts and is treated the same way."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from revstudio.compiler.checkpointing import step_weight
from revstudio.compiler.plan import _Lowering
from revstudio.compiler.regions import layout_only
from revstudio.core.generate import Builder
from revstudio.core.spec import registry
from revstudio.nodes import CATALOG

LAYOUT = {"Split", "Concat", "Flatten", "Reshape", "Permute", "Squeeze", "Input", "Output", "GroupInput",
          "GroupOutput"}
RELEASABLE = {"Conv", "Linear", "Merge", "Norm", "Pool"}


def test_the_built_in_types_declare_what_the_compiler_needs() -> None:
    assert len(CATALOG) == 24
    for spec in CATALOG:
        assert layout_only(spec.type_id) == (spec.type_id in LAYOUT), spec.type_id
        expected = 0 if spec.type_id in LAYOUT else 2 if spec.type_id == "AdditiveCoupling" else 1
        assert step_weight(spec.type_id) == expected, spec.type_id
        params = spec.defaults()
        assert spec.output_releasable(params) == (spec.type_id in RELEASABLE), spec.type_id


def test_an_unknown_type_computes_and_keeps_its_output() -> None:
    assert not layout_only("NoSuchType")
    assert step_weight("NoSuchType") == 1


@pytest.fixture
def declared() -> Iterator[list[str]]:
    """Two plugin-like types registered by hand: a Reshape that declares nothing (a plugin that
    says nothing of itself) and an AdditiveCoupling whose runtime makes three steps."""
    made = [registry.register(replace(registry.get("Reshape"), type_id="PlainReshape", layout_only=False)),
            registry.register(replace(registry.get("AdditiveCoupling"), type_id="ThreeStep", runtime_steps=3))]
    yield [s.type_id for s in made]
    for spec in made:
        registry._specs.pop(spec.type_id, None)


def test_a_registered_type_is_weighed_by_its_declaration(declared: list[str]) -> None:
    assert not layout_only("PlainReshape") and step_weight("PlainReshape") == 1
    assert step_weight("ThreeStep") == 3


def test_a_region_input_is_released_only_after_a_layer_that_declares_it() -> None:
    b = Builder("releasable")
    b.node("Input", "x", shape=[4, 8, 8])
    conv = b.node("Conv", "conv", out_channels=4, kernel_size=3, padding="same")
    act = b.node("Activation", "act", fn="relu")
    b.chain("x.out", conv)
    b.chain("conv.out", act)
    graph = b.done()
    assert _Lowering.releasable_producer(graph, "conv")
    assert not _Lowering.releasable_producer(graph, "act")
    assert not _Lowering.releasable_producer(graph, "x")
