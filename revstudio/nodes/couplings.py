"""Coupling blocks: AdditiveCoupling (RevNet/NICE) and AffineCoupling (RealNVP/Glow).

Both split the channels into x1 (the first ``split`` channels) and x2 (the rest)
and compute their functions with group bodies, which can hold any layers (Conv,
BiRNN, ...): the block stays invertible whatever the bodies are.
"""
from __future__ import annotations

from revstudio.core.params import Float, GroupRef, Int
from revstudio.core.spec import BuildContext, InferContext, NodeSpec, ShapeT

from ._common import ModuleRecipe, builder, fmt, need_ndim, problem, recipe
from ._groups import single_map


def _halves(kind: str, ctx: InferContext) -> tuple[ShapeT, ShapeT, ShapeT]:
    """(input shape, x1 shape, x2 shape)."""
    shape = ctx.input("in")
    need_ndim(kind, ctx, shape, (1, 2, 3), "add a Reshape")
    channels = shape[0]
    if channels < 2 and len(shape) == 1:
        raise problem(kind, ctx, f"input {fmt(shape)} is a single value, nothing to split into x1 and x2; "
                                 "a coupling needs at least 2 values (an Input of shape [2] or more)", "in")
    if channels < 2:  # (a flow on 1-channel images: a Conv would give channels, and no log-determinant)
        way = ("add a Squeeze before it (it folds space into channels and stays invertible); a Conv instead "
               "leaves no flow (its Jacobian has no log-determinant)" if kind == "AffineCoupling"
               else "add a Squeeze or Conv before it")
        raise problem(kind, ctx, f"input {fmt(shape)} has a single channel, nothing to couple; {way}", "in")
    c1 = ctx.params["split"] or channels // 2
    if c1 >= channels:
        raise problem(kind, ctx, f"split {c1} leaves no channels for x2 (the input has {channels}); "
                                 f"use 1..{channels - 1}, or 0 for half")
    return shape, (c1, *shape[1:]), (channels - c1, *shape[1:])


def _odd_hint(ctx: InferContext) -> str:
    """Where split 0 halves an odd channel count, x1 gets the smaller part; torch.chunk(x, 2), how
    MemCNN and RevLib split, gives x1 the larger one: a ported F or G then misses by a channel."""
    channels = ctx.input("in")[0]
    if ctx.params["split"] or channels % 2 == 0:
        return ""
    return (f"; or, for x1 = the first {channels - channels // 2} channels as torch.chunk(x, 2) splits "
            f"{channels} (MemCNN, RevLib), set split to {channels - channels // 2} (0 gives x1 {channels // 2})")


def _split_of(ctx: BuildContext) -> int:
    return ctx.params["split"] or ctx.in_shapes[0][0] // 2


# ---- AdditiveCoupling --------------------------------------------------------
def _additive_check(ctx: InferContext) -> int:
    """Checks both bodies; returns their total parameter count."""
    shape, x1, x2 = _halves("AdditiveCoupling", ctx)
    hint = _odd_hint(ctx)
    total = single_map("AdditiveCoupling", ctx, "f", x2, "x2", x1, "y1 = x1 + F(x2)", hint).parameters
    if ctx.params["g"]:
        total += single_map("AdditiveCoupling", ctx, "g", x1, "y1", x2, "y2 = x2 + G(y1)", hint).parameters
    return total


def _additive_infer(ctx: InferContext) -> dict[str, ShapeT]:
    _additive_check(ctx)
    return {"out": ctx.input("in")}


def _additive_recipe(ctx: BuildContext) -> ModuleRecipe:
    g = ctx.params["g"] or None
    return recipe("composite", "AdditiveCoupling", bodies={"f": ctx.params["f"], "g": g}, split=_split_of(ctx))


ADDITIVE = NodeSpec(
    type_id="AdditiveCoupling", category="Couplings",
    shape_rule="the output has the input's shape. x1 is the first split channels, x2 the rest: F "
               "reads x2's shape and must give x1's, G reads x1's and must give x2's",
    memory_note="inside a reversible region nothing but its output (backward rebuilds x1 and x2 and "
                "reruns F and G); outside one, what F's and G's layers keep.",
    examples=(({"f": "F", "g": "G"}, ((16, 32),)),),
    runtime_steps=2,  # F, then G
    help="RevNet block: x1 = first split channels, x2 = the rest; y1 = x1 + F(x2), y2 = x2 + G(y1), "
         "output [y1, y2]. F maps x2 to x1's shape, G maps y1 to x2's shape (no G: y2 = x2). Invertible.",
    params={
        "split": Int(default=0, min=0, help="Channels in x1 (0: half of the input channels)."),
        "f": GroupRef(default="", help="Group computing F from x2; its output has x1's shape."),
        "g": GroupRef(default="", optional=True,
                      help="Optional group computing G from y1; its output has x2's shape."),
    },
    inputs=("in",), outputs=("out",),
    infer=_additive_infer, count_params=_additive_check,
    build=builder("AdditiveCoupling", _additive_recipe),
    fresh_output=True,
    invertible=True, key_params=("f", "g"),
)


# ---- AffineCoupling ----------------------------------------------------------
def _affine_check(ctx: InferContext) -> int:
    _, x1, x2 = _halves("AffineCoupling", ctx)
    want = (2 * x2[0], *x2[1:])
    why = "scale and shift for x2 (first half log-scale, second half shift)"
    return single_map("AffineCoupling", ctx, "net", x1, "x1", want, why, _odd_hint(ctx)).parameters


def _affine_infer(ctx: InferContext) -> dict[str, ShapeT]:
    _affine_check(ctx)
    return {"out": ctx.input("in")}


def _affine_recipe(ctx: BuildContext) -> ModuleRecipe:
    return recipe("composite", "AffineCoupling", bodies={"net": ctx.params["net"]}, split=_split_of(ctx),
                  clamp=ctx.params["clamp"])


AFFINE = NodeSpec(
    type_id="AffineCoupling", category="Couplings",
    shape_rule="the output has the input's shape. x1 is the first split channels, x2 the rest: the "
               "net reads x1's shape and must give twice x2's channels (log-scale, then shift)",
    memory_note="inside a reversible region nothing but its output (backward rebuilds x2 and reruns "
                "the net); outside one, what the net's layers keep and the scale.",
    examples=(({"net": "net"}, ((16, 32),)),),
    help="RealNVP/Glow block: x1 passes through and conditions x2: y2 = x2 * exp(s) + t. The net group "
         "maps x1 to twice x2's channels: the first half is the log-scale s, the second the shift t. "
         "Invertible; the log-determinant of the last forward is in the module's logdet.",
    params={
        "split": Int(default=0, min=0, help="Channels in x1, the conditioning half (0: half)."),
        "net": GroupRef(default="", help="Group mapping x1 to [log-scale, shift] for x2 (2x x2's channels)."),
        "clamp": Float(default=2.0, min=0.0, max=100.0,
                       help="Soft bound on the log-scale: clamp * tanh(s / clamp); 0 disables it."),
    },
    inputs=("in",), outputs=("out",),
    infer=_affine_infer, count_params=_affine_check,
    build=builder("AffineCoupling", _affine_recipe),
    fresh_output=True,
    invertible=True, key_params=("net",),
)

SPECS = (ADDITIVE, AFFINE)
