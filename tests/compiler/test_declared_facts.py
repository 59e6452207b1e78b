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
from revstudio.core.generate import Builder, add_coupling_groups
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


@pytest.fixture
def computing_squeeze() -> Iterator[str]:
    """A plugin-like invertible type with no weights that does not declare itself layout only
    (a Squeeze's module under another name: the runtime cannot tell it from a weightless layer
    that computes, like a plugin's invertible leaky ReLU)."""
    spec = registry.register(replace(registry.get("Squeeze"), type_id="ComputingSqueeze", layout_only=False))
    yield spec.type_id
    registry._specs.pop(spec.type_id, None)


@pytest.mark.parametrize("kind", ["Squeeze", "ComputingSqueeze"])
def test_only_a_layout_only_step_runs_on_a_pairs_halves_apart(computing_squeeze: str, kind: str) -> None:
    """In a float32 model a region's streams are compensated pairs. A layer that only moves values
    around moves hi and lo alike; any other invertible layer computes on the pair's value, in the
    model's dtype, as a layer with weights does (run on hi and lo apart, a nonlinear one would
    compute another function, and the memory estimate prices it as a flow layer)."""
    torch = pytest.importorskip("torch")
    from revstudio.compiler import compile as compile_graph
    from revstudio.compiler.runtime_steps import Invertible

    b = Builder("squeezed")
    b.node("Input", "x", shape=[4, 4, 4])
    b.node("AdditiveCoupling", "c0", f="f", g="g")
    b.node(kind, "sq", factor=2)
    b.node("AdditiveCoupling", "c1", f="f16", g="g16")
    b.node("Output", "y")
    b.chain("x.out", "c0", "sq", "c1", "y")
    graph = b.done()
    add_coupling_groups(graph, 4)
    add_coupling_groups(graph, 16, f="f16", g="g16")
    model = compile_graph(graph, mode="reversible")
    (region,) = model._regions
    (step,) = [s for s in region.steps if isinstance(s, Invertible)]
    assert step.cast == (kind == "ComputingSqueeze")
    x = torch.randn(2, 4, 4, 4, requires_grad=True)
    y = model(x)
    y.square().sum().backward()  # the inverse runs the same way: gradients agree with standard mode
    reference = compile_graph(graph, mode="standard")
    reference.load_state_dict(model.state_dict())
    x2 = x.detach().clone().requires_grad_(True)
    y2 = reference(x2)
    y2.square().sum().backward()
    assert torch.allclose(y, y2, atol=1e-6) and torch.allclose(x.grad, x2.grad, atol=1e-5)
