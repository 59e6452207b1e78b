"""Fixtures for the diagnostics tests: a private registry of minimal specs.

The estimate's rules are keyed by type id and read only shapes, so these
stand-ins (same type ids and ports as the catalog, no build) test it without
depending on the real catalog's details.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from revstudio.core.graph import Graph
from revstudio.core.params import Choice, Int, Shape
from revstudio.core.spec import InferContext, NodeSpec, Registry, numbered


def _conv_infer(ctx: InferContext) -> dict[str, tuple[int, ...]]:
    c, *rest = ctx.input()
    return {"out": (int(ctx.params["out_channels"]), *rest)}


def _conv_params(ctx: InferContext) -> int:
    c = ctx.input()[0]
    k = int(ctx.params["kernel_size"])
    out = int(ctx.params["out_channels"])
    return out * c * k * k + out


def _split_infer(ctx: InferContext) -> dict[str, tuple[int, ...]]:
    c, *rest = ctx.input()
    k = int(ctx.params["sections"])
    return {f"out{i}": (c // k, *rest) for i in range(k)}


def _concat_infer(ctx: InferContext) -> dict[str, tuple[int, ...]]:
    shapes = [ctx.input(p) for p in numbered("in", int(ctx.params["inputs"]))]
    return {"out": (sum(s[0] for s in shapes), *shapes[0][1:])}


def make_registry() -> Registry:
    reg = Registry()
    same = lambda ctx: {"out": ctx.input()}  # noqa: E731
    reg.register(NodeSpec("Input", "io", "", {"shape": Shape(default=(4,)), "dtype": Choice(
        default="float32", options=("float32", "float64"))}, (), ("out",),
        lambda ctx: {"out": tuple(ctx.params["shape"])}))
    reg.register(NodeSpec("Output", "io", "", {}, ("in",), (), lambda ctx: {}))
    reg.register(NodeSpec("Conv", "layers", "", {"out_channels": Int(default=4, min=1),
                                                 "kernel_size": Int(default=3, min=1)},
                          ("in",), ("out",), _conv_infer, _conv_params))
    reg.register(NodeSpec("Activation", "layers", "", {"fn": Choice(default="relu", options=(
        "relu", "gelu", "identity"))}, ("in",), ("out",), same))
    reg.register(NodeSpec("Split", "structure", "", {"sections": Int(default=2, min=1)}, ("in",),
                          lambda p, g: numbered("out", int(p["sections"])), _split_infer))
    reg.register(NodeSpec("Concat", "structure", "", {"inputs": Int(default=2, min=1)},
                          lambda p, g: numbered("in", int(p["inputs"])), ("out",), _concat_infer))
    reg.register(NodeSpec("Merge", "structure", "", {"mode": Choice(default="add", options=("add", "mul")),
                                                     "inputs": Int(default=2, min=1)},
                          lambda p, g: numbered("in", int(p["inputs"])), ("out",),
                          lambda ctx: {"out": ctx.input("in0")}))
    reg.register(NodeSpec("Pool", "layers", "", {"kind": Choice(default="global_avg", options=(
        "max", "global_avg"))}, ("in",), ("out",), lambda ctx: {"out": ctx.input()[:1]}))
    return reg


@dataclass
class FakeRegion:
    """What the estimate reads of a compiler region."""

    id: str
    nodes: list[str]
    inputs: list[str]
    outputs: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "nodes": self.nodes, "inputs": self.inputs, "outputs": self.outputs}


def revnet(blocks: int, channels: int = 8, size: int = 4, dtype: str = "float32") -> tuple[Graph, FakeRegion]:
    """Input -> N wired RevNet blocks (F, G = Conv -> ReLU -> Conv) -> Pool -> Output,
    with the region the analysis would find (every block node)."""
    g = Graph("revnet")
    half = channels // 2
    g.add_node("Input", "x", {"shape": [channels, size, size], "dtype": dtype})
    g.add_node("Split", "s", {"sections": 2})
    g.connect("x.out", "s.in")
    a, b = "s.out0", "s.out1"
    nodes = ["s"]
    for i in range(blocks):
        for fn, src, dst in (("f", b, a), ("g", None, None)):
            if fn == "g":
                src, dst = a, b
            c1, r, c2, m = f"{fn}{i}c1", f"{fn}{i}r", f"{fn}{i}c2", f"{fn}{i}m"
            g.add_node("Conv", c1, {"out_channels": half, "kernel_size": 3})
            g.add_node("Activation", r, {"fn": "relu"})
            g.add_node("Conv", c2, {"out_channels": half, "kernel_size": 3})
            g.add_node("Merge", m, {"mode": "add", "inputs": 2})
            g.connect(src, f"{c1}.in")
            g.connect(f"{c1}.out", f"{r}.in")
            g.connect(f"{r}.out", f"{c2}.in")
            g.connect(dst, f"{m}.in0")
            g.connect(f"{c2}.out", f"{m}.in1")
            nodes += [c1, r, c2, m]
            if fn == "f":
                a = f"{m}.out"
            else:
                b = f"{m}.out"
    g.add_node("Concat", "cat", {"inputs": 2})
    g.connect(a, "cat.in0")
    g.connect(b, "cat.in1")
    nodes.append("cat")
    g.add_node("Pool", "pool", {"kind": "global_avg"})
    g.add_node("Output", "y", {})
    g.connect("cat.out", "pool.in")
    g.connect("pool.out", "y.in")
    return g, FakeRegion("r0", nodes, ["x.out"], ["cat.out"])


@pytest.fixture
def fake_registry() -> Registry:
    """A registry of the stand-in specs above."""
    return make_registry()


@pytest.fixture
def fake_revnet():  # type: ignore[no-untyped-def]
    """``fake_revnet(blocks, ...) -> (graph, region)`` built from the stand-in specs."""
    return revnet
