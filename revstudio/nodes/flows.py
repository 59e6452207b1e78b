"""Invertible flow layers: Permute, InvConv1x1, ActNorm and Squeeze.

They act on the channel axis (Squeeze trades positions for channels, a Permute of kind axes
reorders the axes), never lose information, and so can run inside reversible regions without storing activations.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from revstudio.core.params import Bool, Choice, Int, IntList
from revstudio.core.spec import BuildContext, InferContext, NodeSpec, SavedTensors, ShapeT

from ._common import ModuleRecipe, builder, fmt, need_ndim, numel, problem, recipe


def _channels(kind: str, ctx: InferContext) -> ShapeT:
    shape = ctx.input("in")
    need_ndim(kind, ctx, shape, (1, 2, 3), "add a Reshape")
    return shape


def _axes_order(ctx: InferContext, shape: ShapeT) -> tuple[int, ...]:
    """``dims`` checked against the input: a permutation of its non-batch axes 0..k-1."""
    dims, k = tuple(ctx.params["dims"]), len(shape)
    if sorted(dims) != list(range(k)):
        example, axes = list(range(k - 1, -1, -1)), "axis" if k == 1 else "axes"
        raise problem("Permute", ctx, f"dims {list(dims)} must be a permutation of 0..{k - 1}: in is {fmt(shape)} "
                                      f"({k} {axes} after the batch); give each axis once, e.g. {example}", "in")
    return dims


def _permute_infer(ctx: InferContext) -> dict[str, ShapeT]:
    shape = ctx.input("in")
    if ctx.params["kind"] != "axes":
        return {"out": _channels("Permute", ctx)}
    need_ndim("Permute", ctx, shape, (1, 2, 3), "add a Reshape")
    return {"out": tuple(shape[d] for d in _axes_order(ctx, shape))}


def _permute_recipe(ctx: BuildContext) -> ModuleRecipe:
    if ctx.params["kind"] == "axes":
        return recipe("flows", "PermuteAxes", dims=tuple(ctx.params["dims"]))
    return recipe("flows", "Permute", channels=ctx.in_shapes[0][0], kind=ctx.params["kind"], seed=ctx.params["seed"])


def _permute_saved(params: Mapping[str, Any], shapes: Sequence[ShapeT], outs: Sequence[ShapeT]) -> SavedTensors:
    if params.get("kind") == "axes":  # its backward reorders the gradient's axes back: a view
        return SavedTensors()
    # its backward scatters the gradient into zeros beside one more input's worth (torch 2.13)
    return SavedTensors(backward_values=numel(shapes[0]) if shapes else 0)


PERMUTE = NodeSpec(
    type_id="Permute", category="Invertible",
    shape_rule="reverse or shuffle: the output has the input's shape, its channels (the first axis) "
               "reordered; axes: output axis i is input axis dims[i] (dims [1, 0] turns (time, features) "
               "into (features, time), the channels-first layout Conv and BiRNN read)",
    memory_note="nothing. Axes: the output is a view of its input in another axis order, no copy; a Conv, "
                "BiRNN or Norm reads that view as it is, while a Flatten or Reshape of it is a copy and a "
                "Linear (which flattens what it reads) keeps such a copy for backward.",
    examples=(({"kind": "axes", "dims": [1, 0]}, ((50, 8),)), ({"kind": "reverse"}, ((8, 16),))),
    layout_only=True,
    help="Reorders the channels with a fixed permutation (reversed, or shuffled from a seed), "
         "so the next coupling transforms different channels; or, with kind axes, reorders the axes "
         "(a transpose: dims [1, 0] turns (time, features) into (features, time)). Invertible, no weights.",
    params={
        "kind": Choice(default="shuffle", options=("reverse", "shuffle", "axes"),
                       help="Which permutation: of the channels (reverse, shuffle) or of the axes (axes)."),
        "seed": Int(default=0, min=0, max=2**31 - 1, help="Seed of the shuffle (same seed, same order)."),
        "dims": IntList(default=(1, 0), min=0, max=2, min_length=1, max_length=3,
                        help="With kind axes: the input axis each output axis takes, counted after the "
                             "batch axis (0 is the channel axis); a permutation of 0..k-1 for a k-axis "
                             "input, e.g. [1, 0] swaps (time, features) to (features, time)."),
    },
    inputs=("in",), outputs=("out",),
    infer=_permute_infer,
    count_params=lambda ctx: 0,
    build=builder("Permute", _permute_recipe),
    # a shuffle copies (a shuffle of a channels_last tensor returns a view); axes: a view
    fresh_output=lambda params, shapes: params.get("kind") != "axes",
    saved_for_backward=_permute_saved,
    invertible=True, key_params=("kind",),
)

INVCONV = NodeSpec(
    type_id="InvConv1x1", category="Invertible",
    shape_rule="the output has the input's shape: a C x C mix of the channels (the first axis) at "
               "every position",
    memory_note="keeps its input outside a reversible region; inside one, nothing (backward rebuilds it).",
    examples=(({}, ((12, 8, 8),)),),
    help="Glow's invertible 1x1 convolution: a learned C x C mixing of the channels at every "
         "position, starting as a random rotation. With lu, inverting it and its log-determinant stay cheap.",
    params={"lu": Bool(default=True, help="Store the matrix as P*L*U (Glow's LU parametrisation), which keeps it "
                                             "invertible. Off, reversible mode's backward refuses a matrix gone "
                                             "nearly singular (condition number x epsilon over 1e-2) as singular.")},
    inputs=("in",), outputs=("out",),
    infer=lambda ctx: {"out": _channels("InvConv1x1", ctx)},
    count_params=lambda ctx: _channels("InvConv1x1", ctx)[0] ** 2,
    build=builder("InvConv1x1", lambda ctx: recipe("flows", "InvConv1x1", channels=ctx.in_shapes[0][0],
                                                     lu=ctx.params["lu"])),
    invertible=True, key_params=("lu",),
)

ACTNORM = NodeSpec(
    type_id="ActNorm", category="Invertible",
    shape_rule="the output has the input's shape; one scale and shift per channel (the first axis)",
    memory_note="keeps its input outside a reversible region; inside one, nothing (backward rebuilds it).",
    examples=(({}, ((12, 8, 8),)),),
    help="A learned per-channel scale and shift (Glow), set from the first batch so that it "
         "comes out with zero mean and unit variance, then trained. Invertible.",
    params={},
    inputs=("in",), outputs=("out",),
    infer=lambda ctx: {"out": _channels("ActNorm", ctx)},
    count_params=lambda ctx: 2 * _channels("ActNorm", ctx)[0],
    build=builder("ActNorm", lambda ctx: recipe("flows", "ActNorm", channels=ctx.in_shapes[0][0])),
    fresh_output=True,
    invertible=True,
)


def _squeeze_infer(ctx: InferContext) -> dict[str, ShapeT]:
    shape = ctx.input("in")
    nd = need_ndim("Squeeze", ctx, shape, (2, 3), "squeeze trades positions for channels")
    f = ctx.params["factor"]
    for size in shape[1:]:
        if size % f:
            raise problem("Squeeze", ctx, f"{fmt(shape)} is not divisible by factor {f} along every "
                                          "position axis; change factor or the input size", "in")
    return {"out": (shape[0] * f ** (nd - 1), *(s // f for s in shape[1:]))}


SQUEEZE = NodeSpec(
    type_id="Squeeze", category="Invertible",
    shape_rule="(C, H, W) gives (C*f*f, H/f, W/f) and (C, L) gives (C*f, L/f): the spatial sizes must "
               "divide by factor",
    memory_note="nothing (it only moves values).",
    examples=(({"factor": 2}, ((3, 32, 32),)),),
    layout_only=True,
    help="Space-to-depth: folds each f x f patch into channels, (C, H, W) -> (C*f*f, H/f, W/f) "
         "(or (C, L) -> (C*f, L/f)). Invertible, no weights.",
    params={"factor": Int(default=2, min=1, max=16, help="Patch size folded into the channels.")},
    inputs=("in",), outputs=("out",),
    infer=_squeeze_infer, count_params=lambda ctx: 0,
    build=builder("Squeeze", lambda ctx: recipe("flows", "Squeeze", factor=ctx.params["factor"])),
    fresh_output=True,
    invertible=True, key_params=("factor",),
)

SPECS = (PERMUTE, INVCONV, ACTNORM, SQUEEZE)
