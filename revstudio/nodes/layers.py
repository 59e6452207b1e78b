"""Ordinary layers: Conv, Linear, Activation, Norm, Pool and Dropout.

Sizes that follow from the input (in_channels, in_features) are inferred, never
typed. Output sizes use PyTorch's exact arithmetic, so the canvas shows what a
forward pass will produce.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from revstudio.core.params import Bool, Choice, Float, Int, IntOrChoice
from revstudio.core.spec import BuildContext, InferContext, NodeSpec, SavedTensors, ShapeT

from ._common import ModuleRecipe, builder, fmt, init_param, need_ndim, numel, problem, recipe

IN_OUT = (("in",), ("out",))


# ---- Conv --------------------------------------------------------------------
def _conv_check(ctx: InferContext) -> tuple[ShapeT, int]:
    shape = ctx.input("in")
    nd = need_ndim("Conv", ctx, shape, (2, 3), "add a Reshape so channels come first, e.g. [C, L]")
    p = ctx.params
    groups = p["groups"]
    if shape[0] % groups or p["out_channels"] % groups:
        raise problem("Conv", ctx, f"groups={groups} must divide both the input channels ({shape[0]}) "
                                   f"and out_channels ({p['out_channels']}); change groups or out_channels")
    if p["padding"] == "same" and p["stride"] > 1:
        raise problem("Conv", ctx, f"padding 'same' only works with stride 1 (stride is {p['stride']}); "
                                   "set padding to a number or stride to 1")
    return shape, nd


def conv_length(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int | None:
    """PyTorch's output length of a convolution/pooling window, or None if nothing fits."""
    span = dilation * (kernel - 1) + 1
    if size + 2 * padding < span:
        return None
    return (size + 2 * padding - span) // stride + 1


def _conv_infer(ctx: InferContext) -> dict[str, ShapeT]:
    shape, _ = _conv_check(ctx)
    p = ctx.params
    if p["padding"] == "same":
        return {"out": (p["out_channels"], *shape[1:])}
    spatial = []
    for size in shape[1:]:
        n = conv_length(size, p["kernel_size"], p["stride"], p["padding"], p["dilation"])
        if n is None:
            span = p["dilation"] * (p["kernel_size"] - 1) + 1
            raise problem("Conv", ctx, f"input {fmt(shape)} is too small for a kernel spanning {span} "
                                       f"positions with padding {p['padding']}; use a smaller kernel_size "
                                       "or dilation, or more padding", "in")
        spatial.append(n)
    return {"out": (p["out_channels"], *spatial)}


def _conv_count(ctx: InferContext) -> int:
    shape, nd = _conv_check(ctx)
    p = ctx.params
    weights = p["out_channels"] * (shape[0] // p["groups"]) * p["kernel_size"] ** (nd - 1)
    return weights + (p["out_channels"] if p["bias"] else 0)


def _conv_recipe(ctx: BuildContext) -> ModuleRecipe:
    shape, p = ctx.in_shapes[0], ctx.params
    return recipe("layers", "Conv1d" if len(shape) == 2 else "Conv2d",
                  in_channels=shape[0], out_channels=p["out_channels"], kernel_size=p["kernel_size"],
                  stride=p["stride"], padding=p["padding"], dilation=p["dilation"], groups=p["groups"],
                  bias=p["bias"], init=p["init"])


def _conv_saved(params: Mapping[str, Any], shapes: Sequence[ShapeT], outs: Sequence[ShapeT]) -> SavedTensors:
    """The weight's gradient reads the input. Padded 'same' by an odd total (an even kernel at
    dilation 1), torch pads a copy by one on the far side first and keeps the copy instead; its
    backward makes the copy's gradient, whose cut is the input's gradient (a view: the rest of the
    copy's is all it holds beyond the gradients)."""
    shape = shapes[0] if shapes else ()
    if params["padding"] != "same" or len(shape) < 2:
        return SavedTensors(ports=("in",))
    extra = [params["dilation"] * (params["kernel_size"] - 1) % 2 for _ in shape[1:]]
    if not any(extra):
        return SavedTensors(ports=("in",))
    padded = shape[0] * numel(tuple(n + e for n, e in zip(shape[1:], extra)))
    return SavedTensors(values=padded, backward_values=padded - numel(shape))


CONV = NodeSpec(
    type_id="Conv", category="Layers",
    shape_rule="(C, L) is read as a 1-D sequence (length last), (C, H, W) as an image; the output has "
               "out_channels channels, each spatial size (size + 2*padding - dilation*(kernel_size-1) "
               "- 1) // stride + 1 ('same' keeps it)",
    memory_note="keeps its input (the weight's gradient reads it).",
    examples=(({"out_channels": 16, "kernel_size": 3, "padding": "same"}, ((3, 32, 32),)),),
    releasable_output=True,
    help="A convolution over (C, L) sequences (1-D) or (C, H, W) images (2-D). "
         "The input channel count is taken from the incoming wire.",
    params={
        "out_channels": Int(default=16, min=1, help="Number of output channels (filters)."),
        "kernel_size": Int(default=3, min=1, max=64, help="Width of the window each output looks at."),
        "stride": Int(default=1, min=1, max=64, help="Step between windows; 2 halves the size."),
        "padding": IntOrChoice(default="same", options=("same",), min=0, max=64,
                               help="Zeros added at each border, or 'same' to keep the size (stride 1 only)."),
        "dilation": Int(default=1, min=1, max=64, help="Spacing between kernel taps."),
        "groups": Int(default=1, min=1, help="Split channels into this many independent groups "
                                              "(must divide input and output channels)."),
        "bias": Bool(default=True, help="Learn an additive bias per output channel."),
        "init": init_param(),
    },
    inputs=IN_OUT[0], outputs=IN_OUT[1],
    infer=_conv_infer, count_params=_conv_count, build=builder("Conv", _conv_recipe),
    fresh_output=True,
    saved_for_backward=_conv_saved,
    key_params=("out_channels", "kernel_size", "stride"),
)


# ---- Linear ------------------------------------------------------------------
def _linear_infer(ctx: InferContext) -> dict[str, ShapeT]:
    ctx.input("in")
    return {"out": (ctx.params["out_features"],)}


def _linear_count(ctx: InferContext) -> int:
    p = ctx.params
    return numel(ctx.input("in")) * p["out_features"] + (p["out_features"] if p["bias"] else 0)


def _linear_recipe(ctx: BuildContext) -> ModuleRecipe:
    p = ctx.params
    return recipe("layers", "Linear", in_features=numel(ctx.in_shapes[0]),
                  out_features=p["out_features"], bias=p["bias"], init=p["init"])


LINEAR = NodeSpec(
    type_id="Linear", category="Layers",
    shape_rule="flattens every non-batch axis into one: any shape in, (out_features,) out",
    memory_note="keeps its input (the weight's gradient reads it).",
    examples=(({"out_features": 10}, ((8, 4, 4),)),),
    releasable_output=True,
    help="A fully connected layer. The input is flattened first, so any shape works; "
         "the output has out_features values per sample.",
    params={
        "out_features": Int(default=10, min=1, help="Number of output values."),
        "bias": Bool(default=True, help="Learn an additive bias per output."),
        "init": init_param(),
    },
    inputs=IN_OUT[0], outputs=IN_OUT[1],
    infer=_linear_infer, count_params=_linear_count, build=builder("Linear", _linear_recipe),
    fresh_output=True,
    saved_for_backward=("in",),  # the weight's gradient reads it
    key_params=("out_features",),
)


# ---- Activation --------------------------------------------------------------
ACTIVATIONS = ("relu", "tanh", "sigmoid", "gelu", "leaky_relu", "elu", "softplus", "identity")
NO_INPLACE = ("gelu", "softplus")


def _activation_infer(ctx: InferContext) -> dict[str, ShapeT]:
    shape = ctx.input("in")
    if ctx.params["inplace"] and ctx.params["fn"] in NO_INPLACE:
        raise problem("Activation", ctx, f"inplace: PyTorch has no in-place {ctx.params['fn']}; "
                                         "set inplace to false or pick another fn")
    return {"out": shape}


def _activation_recipe(ctx: BuildContext) -> ModuleRecipe:
    p = ctx.params
    return recipe("layers", "Activation", fn=p["fn"], inplace=p["inplace"],
                  negative_slope=p["negative_slope"])


def _activation_fresh(params: Mapping[str, Any], shapes: Sequence[ShapeT]) -> bool | None:
    """relu, tanh and sigmoid backward read their result; in place, the result is the input."""
    if params["fn"] == "identity":
        return None
    return not params["inplace"] and params["fn"] not in ("relu", "tanh", "sigmoid")


def _activation_saved(params: Mapping[str, Any], shapes: Sequence[ShapeT],
                      outs: Sequence[ShapeT]) -> tuple[str, ...]:
    """relu, tanh and sigmoid write their derivative in terms of the result, the rest of the input
    (in place, the two are one tensor)."""
    if params["fn"] == "identity":
        return ()
    return ("out",) if params["fn"] in ("relu", "tanh", "sigmoid") else ("in",)


ACTIVATION = NodeSpec(
    type_id="Activation", category="Layers",
    shape_rule="the output has the input's shape",
    memory_note="relu, tanh and sigmoid keep their output, the others their input; identity keeps nothing.",
    examples=(({"fn": "tanh"}, ((16, 8),)),),
    help="An elementwise nonlinearity such as relu or tanh; the shape is unchanged.",
    params={
        "fn": Choice(default="relu", options=ACTIVATIONS, help="Which function to apply."),
        "inplace": Bool(default=False, help="Overwrite the input instead of allocating a new tensor "
                                            "(saves memory; the input must not be needed elsewhere)."),
        "negative_slope": Float(default=0.01, min=0.0, max=1.0, help="Slope for x < 0 (leaky_relu only)."),
    },
    inputs=IN_OUT[0], outputs=IN_OUT[1],
    infer=_activation_infer, count_params=lambda ctx: 0, build=builder("Activation", _activation_recipe),
    fresh_output=_activation_fresh,
    saved_for_backward=_activation_saved,
    key_params=("fn",),
)


# ---- Norm --------------------------------------------------------------------
def _norm_check(ctx: InferContext) -> ShapeT:
    shape = ctx.input("in")
    kind = ctx.params["kind"]
    if kind == "instance":
        need_ndim("Norm", ctx, shape, (2, 3), "instance norm needs positions to average over; "
                                              "use kind batch or layer for flat features")
        if numel(shape[1:]) == 1:
            raise problem("Norm", ctx, f"instance norm of {fmt(shape)} averages over a single position, "
                                       "which leaves nothing; use kind batch or layer", "in")
    else:
        need_ndim("Norm", ctx, shape, (1, 2, 3), "add a Reshape")
    groups = ctx.params["groups"]
    if kind == "group" and shape[0] % groups:
        raise problem("Norm", ctx, f"groups={groups} must divide the {shape[0]} input "
                                   "channels; change groups")
    # One value per group (or per sample) normalises to a constant, whatever the input, and
    # torch refuses it outright at batch size 1 ("Expected more than 1 value per channel").
    if kind == "group" and numel(shape) // groups == 1:
        raise problem("Norm", ctx, f"group norm of {fmt(shape)} with groups={groups} averages each group over "
                                   "a single value, which leaves nothing; use fewer groups, or kind batch")
    if kind == "layer" and numel(shape) == 1:
        raise problem("Norm", ctx, f"layer norm of {fmt(shape)} averages over a single value, which leaves "
                                   "nothing; use kind batch", "in")
    return shape


def _norm_infer(ctx: InferContext) -> dict[str, ShapeT]:
    return {"out": _norm_check(ctx)}


def _norm_count(ctx: InferContext) -> int:
    shape = _norm_check(ctx)
    if not ctx.params["affine"]:
        return 0
    return 2 * (numel(shape) if ctx.params["kind"] == "layer" else shape[0])


def _norm_recipe(ctx: BuildContext) -> ModuleRecipe:
    shape, p = ctx.in_shapes[0], ctx.params
    kind, eps, affine = p["kind"], p["eps"], p["affine"]
    if kind == "batch":
        return recipe("layers", "BatchNorm2d" if len(shape) == 3 else "BatchNorm1d",
                      num_features=shape[0], eps=eps, affine=affine)
    if kind == "layer":
        return recipe("layers", "LayerNorm", normalized_shape=tuple(shape), eps=eps, elementwise_affine=affine)
    if kind == "group":
        return recipe("layers", "GroupNorm", num_groups=p["groups"], num_channels=shape[0], eps=eps,
                      affine=affine)
    return recipe("layers", "InstanceNorm2d" if len(shape) == 3 else "InstanceNorm1d",
                  num_features=shape[0], eps=eps, affine=affine)


NORM = NodeSpec(
    type_id="Norm", category="Layers",
    shape_rule="the output has the input's shape; the channel axis (the first) is the one batch, "
               "group and instance normalise per channel",
    memory_note="keeps its input and per-sample statistics (batch: per-channel ones).",
    examples=(({"kind": "group", "groups": 4}, ((16, 8, 8),)),),
    releasable_output=True,
    help="Normalises activations to zero mean and unit variance: over the batch (batch), "
         "over each sample (layer), over channel groups (group) or per channel and sample (instance).",
    params={
        "kind": Choice(default="batch", options=("batch", "layer", "group", "instance"),
                       help="Which statistics to normalise with."),
        "groups": Int(default=1, min=1, help="Channel groups for kind group (must divide the channels)."),
        "affine": Bool(default=True, help="Learn a scale and shift after normalising."),
        "eps": Float(default=1e-5, min=1e-12, max=1.0, help="Added to the variance to avoid dividing by zero."),
    },
    inputs=IN_OUT[0], outputs=IN_OUT[1],
    infer=_norm_infer, count_params=_norm_count, build=builder("Norm", _norm_recipe),
    fresh_output=lambda p, shapes: p["kind"] != "instance",  # instance norm returns a view
    key_params=("kind",),
)


# ---- Pool --------------------------------------------------------------------
def _pool_infer(ctx: InferContext) -> dict[str, ShapeT]:
    shape = ctx.input("in")
    p = ctx.params
    if p["kind"] == "global_avg":
        need_ndim("Pool", ctx, shape, (2, 3), "global pooling averages over positions")
        return {"out": (shape[0],)}
    need_ndim("Pool", ctx, shape, (2, 3), "add a Reshape so channels come first")
    kernel, padding = p["kernel_size"], p["padding"]
    stride = p["stride"] or kernel
    if 2 * padding > kernel:
        raise problem("Pool", ctx, f"padding {padding} is more than half of kernel_size {kernel}; "
                                   "PyTorch does not allow it, lower padding")
    spatial = []
    for size in shape[1:]:
        n = conv_length(size, kernel, stride, padding, 1)
        if n is None:
            raise problem("Pool", ctx, f"input {fmt(shape)} is smaller than the {kernel}-wide window; "
                                       "use a smaller kernel_size or global_avg", "in")
        spatial.append(n)
    return {"out": (shape[0], *spatial)}


def _pool_recipe(ctx: BuildContext) -> ModuleRecipe:
    shape, p = ctx.in_shapes[0], ctx.params
    if p["kind"] == "global_avg":
        return recipe("layers", "GlobalAvgPool")
    cls = ("MaxPool" if p["kind"] == "max" else "AvgPool") + ("1d" if len(shape) == 2 else "2d")
    return recipe("layers", cls, kernel_size=p["kernel_size"], stride=p["stride"] or p["kernel_size"],
                  padding=p["padding"])


def _pool_fresh(params: Mapping[str, Any], shapes: Sequence[ShapeT]) -> bool:
    """torch pools a sequence (C, L) as a one-row image and returns a view of that."""
    return params["kind"] == "global_avg" or (bool(shapes) and len(shapes[0]) == 3)


def _pool_saved(params: Mapping[str, Any], shapes: Sequence[ShapeT], outs: Sequence[ShapeT]) -> SavedTensors:
    """A mean over all positions keeps nothing but sizes; a window keeps its input, and a max the
    int64 position of each maximum."""
    if params["kind"] == "global_avg":
        return SavedTensors()
    return SavedTensors(ports=("in",), indices=numel(outs[0]) if params["kind"] == "max" and outs else 0)


POOL = NodeSpec(
    type_id="Pool", category="Layers",
    shape_rule="(C, L) or (C, H, W): each spatial size shrinks to (size + 2*padding - kernel_size) // "
               "stride + 1; global_avg gives (C,)",
    memory_note="a window keeps its input (max also each maximum's position); global_avg keeps nothing.",
    examples=(({"kind": "max", "kernel_size": 2}, ((16, 32, 32),)),),
    releasable_output=True,
    help="Downsamples by taking the max or mean of each window; global_avg averages every "
         "position, turning (C, H, W) into (C).",
    params={
        "kind": Choice(default="max", options=("max", "avg", "global_avg"), help="How to pool."),
        "kernel_size": Int(default=2, min=1, max=64, help="Window size."),
        "stride": Int(default=0, min=0, max=64, help="Step between windows (0: same as kernel_size)."),
        "padding": Int(default=0, min=0, max=32, help="Border added on each side (at most half the kernel)."),
    },
    inputs=IN_OUT[0], outputs=IN_OUT[1],
    infer=_pool_infer, count_params=lambda ctx: 0, build=builder("Pool", _pool_recipe),
    fresh_output=_pool_fresh,
    saved_for_backward=_pool_saved,
    key_params=("kind", "kernel_size"),
)


# ---- Dropout -----------------------------------------------------------------
def _same_shape(ctx: InferContext) -> dict[str, ShapeT]:
    return {"out": ctx.input("in")}


DROPOUT = NodeSpec(
    type_id="Dropout", category="Layers",
    shape_rule="the output has the input's shape",
    memory_note="keeps its random mask (one byte a value).",
    examples=(({"p": 0.1}, ((64,),)),),
    help="During training, zeroes each value with probability p and scales the rest by 1/(1-p); "
         "does nothing in evaluation.",
    params={"p": Float(default=0.5, min=0.0, max=1.0, help="Probability of dropping a value.")},
    inputs=IN_OUT[0], outputs=IN_OUT[1],
    infer=_same_shape, count_params=lambda ctx: 0,
    fresh_output=lambda p, shapes: None if p["p"] == 0 else True,
    build=builder("Dropout", lambda ctx: recipe("layers", "Dropout", p=ctx.params["p"])),
    key_params=("p",),
)

SPECS = (CONV, LINEAR, ACTIVATION, NORM, POOL, DROPOUT)
