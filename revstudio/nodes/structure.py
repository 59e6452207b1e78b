"""Structural nodes that move values around: Flatten, Reshape, Split, Concat, Merge.

Flatten, Reshape, Split and Concat are bijective (invertible). ``dim`` counts
non-batch axes, so 0 is the channel axis. Variadic nodes size their ports from
their params: Split has out0..out{k-1}, Concat and Merge in0..in{n-1}.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from revstudio.core.params import Choice, Int, IntOrList, Shape
from revstudio.core.spec import BuildContext, Groups, InferContext, NodeSpec, SavedTensors, ShapeT, numbered

from ._common import ModuleRecipe, builder, fmt, numel, problem, recipe

MAX_PORTS = 64


def _count_rule(prefix: str, param: str, default: int) -> Callable[[Mapping[str, Any], Groups], tuple[str, ...]]:
    """Ports numbered from a count (or the length of a list) held in ``param``."""

    def rule(params: Mapping[str, Any], groups: Groups) -> tuple[str, ...]:
        value = params.get(param, default)
        if isinstance(value, (list, tuple)):
            n = len(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            n = value
        else:
            n = 0
        return numbered(prefix, max(0, min(n, MAX_PORTS)))

    return rule


def _check_dim(kind: str, ctx: InferContext, shape: ShapeT, dim: int, port: str = "in") -> int:
    if dim >= len(shape):
        raise problem(kind, ctx, f"dim {dim} does not exist for {port} ({fmt(shape)}, dims 0..{len(shape) - 1}); "
                                 "0 is the channel dim", port)
    return dim


# ---- Flatten / Reshape -------------------------------------------------------
FLATTEN = NodeSpec(
    type_id="Flatten", category="Structure",
    shape_rule="any shape becomes one axis of all its values",
    memory_note="nothing (the output is a view of its input).",
    examples=(({}, ((8, 4, 4),)),),
    layout_only=True,
    help="Turns each sample into one long vector, e.g. 8x4x4 into 128. Invertible.",
    params={},
    inputs=("in",), outputs=("out",),
    infer=lambda ctx: {"out": (numel(ctx.input("in")),)},
    count_params=lambda ctx: 0,
    build=builder("Flatten", lambda ctx: recipe("structure", "Flatten", in_shape=tuple(ctx.in_shapes[0]))),
    invertible=True,
)


def _values(n: int) -> str:
    return f"{n} value" if n == 1 else f"{n} values"


def _reshape_target(ctx: InferContext) -> ShapeT:
    shape = ctx.input("in")
    target = tuple(ctx.params["shape"])
    if 0 in target:
        raise problem("Reshape", ctx, f"shape {list(target)} has a 0; every size must be positive (or one -1)")
    if target.count(-1) > 1:
        raise problem("Reshape", ctx, f"shape {list(target)} has more than one -1; only one size can be inferred")
    total, known = numel(shape), numel([s for s in target if s != -1])
    if -1 in target:
        if total % known:
            raise problem("Reshape", ctx, f"cannot reshape {fmt(shape)} ({_values(total)}) to {list(target)}: "
                                          f"{total} is not divisible by {known}", "in")
        target = tuple(total // known if s == -1 else s for s in target)
    elif known != total:
        raise problem("Reshape", ctx, f"cannot reshape {fmt(shape)} ({_values(total)}) to {fmt(target)} "
                                      f"({_values(known)}); the sizes must multiply to {total}", "in")
    return target


def _reshape_recipe(ctx: BuildContext) -> ModuleRecipe:
    return recipe("structure", "Reshape", in_shape=tuple(ctx.in_shapes[0]), out_shape=tuple(ctx.out_shapes[0]))


RESHAPE = NodeSpec(
    type_id="Reshape", category="Structure",
    shape_rule="the same number of values in a new shape; one size may be -1 (inferred)",
    memory_note="nothing (the output is a view of its input).",
    examples=(({"shape": [8, 16]}, ((128,),)),),
    layout_only=True,
    help="Rearranges each sample into a new shape with the same number of values "
         "(one size may be -1 to infer it). Invertible.",
    params={"shape": Shape(default=(-1,), min=-1,
                           help="Target shape without the batch dimension; one entry may be -1.")},
    inputs=("in",), outputs=("out",),
    infer=lambda ctx: {"out": _reshape_target(ctx)},
    count_params=lambda ctx: 0,
    build=builder("Reshape", _reshape_recipe),
    invertible=True, key_params=("shape",),
)


# ---- Split -------------------------------------------------------------------
def _split_sizes(ctx: InferContext) -> tuple[int, ...]:
    shape = ctx.input("in")
    dim = _check_dim("Split", ctx, shape, ctx.params["dim"])
    size, sections = shape[dim], ctx.params["sections"]
    if isinstance(sections, int):
        if size % sections:
            raise problem("Split", ctx, f"cannot split {size} (dim {dim} of {fmt(shape)}) into {sections} "
                                        f"equal parts; use a list of sizes such as "
                                        f"[{size // 2}, {size - size // 2}]", "in")
        return (size // sections,) * sections
    if sum(sections) != size:
        raise problem("Split", ctx, f"sections {list(sections)} add up to {sum(sections)} but dim {dim} of "
                                    f"{fmt(shape)} is {size}; make them add up to {size}", "in")
    return tuple(sections)


def _split_infer(ctx: InferContext) -> dict[str, ShapeT]:
    shape, dim = ctx.input("in"), ctx.params["dim"]
    sizes = _split_sizes(ctx)
    return {f"out{i}": shape[:dim] + (s,) + shape[dim + 1:] for i, s in enumerate(sizes)}


def _split_recipe(ctx: BuildContext) -> ModuleRecipe:
    dim = ctx.params["dim"]
    return recipe("structure", "Split", sizes=tuple(s[dim] for s in ctx.out_shapes), dim=dim)


SPLIT = NodeSpec(
    type_id="Split", category="Structure",
    shape_rule="k parts (or parts of the listed sizes) along dim; the other axes are kept",
    memory_note="nothing (the parts are views of the input).",
    examples=(({"sections": 2}, ((8, 16),)),),
    layout_only=True,
    help="Cuts a tensor into k equal parts, or parts of the listed sizes, along dim "
         "(0 = channels). The parts are views, no copy. Invertible.",
    params={
        "sections": IntOrList(default=2, min=1, max=MAX_PORTS,
                              help="Number of equal parts, or a list of sizes such as [4, 12]."),
        "dim": Int(default=0, min=0, max=3, help="Axis to split (0 = channels)."),
    },
    inputs=("in",), outputs=_count_rule("out", "sections", 2),
    infer=_split_infer, count_params=lambda ctx: 0, build=builder("Split", _split_recipe),
    invertible=True, key_params=("sections",),
)


# ---- Concat ------------------------------------------------------------------
def _inputs(ctx: InferContext) -> list[tuple[str, ShapeT]]:
    ports = numbered("in", ctx.params["inputs"])
    return [(port, ctx.input(port)) for port in ports]


def _joined(kind: str, ctx: InferContext, dim: int, why: str) -> ShapeT:
    """Shapes must agree except along ``dim``; returns the joined shape."""
    shapes = _inputs(ctx)
    first_port, first = shapes[0]
    _check_dim(kind, ctx, first, dim, first_port)
    total = 0
    for port, shape in shapes:
        same_rank = len(shape) == len(first)
        if not same_rank or shape[:dim] + shape[dim + 1:] != first[:dim] + first[dim + 1:]:
            raise problem(kind, ctx, f"{port} is {fmt(shape)} but {first_port} is {fmt(first)}; {why}", port)
        total += shape[dim]
    return first[:dim] + (total,) + first[dim + 1:]


def _concat_infer(ctx: InferContext) -> dict[str, ShapeT]:
    dim = ctx.params["dim"]
    why = f"concat along dim {dim} needs every other size equal"
    return {"out": _joined("Concat", ctx, dim, why)}


def _concat_recipe(ctx: BuildContext) -> ModuleRecipe:
    dim = ctx.params["dim"]
    return recipe("structure", "Concat", sizes=tuple(s[dim] for s in ctx.in_shapes), dim=dim)


CONCAT = NodeSpec(
    type_id="Concat", category="Structure",
    shape_rule="joins along dim; every other size must match",
    memory_note="nothing.",
    examples=(({"inputs": 2}, ((4, 16), (4, 16))),),
    layout_only=True,
    help="Joins n tensors along dim (0 = channels); all other sizes must match. "
         "Invertible, since it knows each input's size.",
    params={
        "inputs": Int(default=2, min=1, max=MAX_PORTS, help="Number of inputs."),
        "dim": Int(default=0, min=0, max=3, help="Axis to join along (0 = channels)."),
    },
    inputs=_count_rule("in", "inputs", 2), outputs=("out",),
    infer=_concat_infer, count_params=lambda ctx: 0, build=builder("Concat", _concat_recipe),
    fresh_output=True,
    invertible=True, key_params=("inputs",),
)


# ---- Merge -------------------------------------------------------------------
MERGE_MODES = ("add", "sub", "mul", "mean", "max", "concat", "stack")


def _merge_infer(ctx: InferContext) -> dict[str, ShapeT]:
    mode = ctx.params["mode"]
    if mode == "concat":
        return {"out": _joined("Merge", ctx, 0, "concat mode needs equal sizes after the channels")}
    shapes = _inputs(ctx)
    first_port, first = shapes[0]
    for port, shape in shapes[1:]:
        if shape != first:
            raise problem("Merge", ctx, f"{port} is {fmt(shape)} but {first_port} is {fmt(first)}; "
                                        f"{mode} mode needs equal shapes: "
                                        f"{_equal_shapes_hint(port, shape, first_port, first)}", port)
    if mode == "stack":
        return {"out": (len(shapes), *first)}
    return {"out": first}


def _equal_shapes_hint(port: str, shape: ShapeT, first_port: str, first: ShapeT) -> str:
    """What to change so ``port`` matches ``first_port``: the channels (or features) of the layer
    feeding it, its spatial size (stride, padding, pooling), or its whole shape."""
    if len(shape) == len(first) and shape[1:] == first[1:]:
        what = ("features (a Linear's out_features)" if len(first) == 1 else
                "channels (a Conv's out_channels)")
        return f"give the layer that feeds {port} {first[0]} {what}, as {first_port} has"
    if len(shape) == len(first) and shape[0] == first[0]:
        return (f"the layer that feeds {port} makes the size {fmt(shape[1:])}, not {fmt(first[1:])}: "
                "check its stride, padding or pooling")
    return f"make the layer that feeds {port} give {fmt(first)}"


def _merge_releasable(params: Mapping[str, Any]) -> bool:
    """A Merge's output is a new tensor autograd does not keep, except where it hands back its
    one input (``NodeSpec.releasable_output``)."""
    return int(params.get("inputs", 2)) >= 2 or params.get("mode") in ("concat", "stack")


def _merge_saved(params: Mapping[str, Any], shapes: Sequence[ShapeT], outs: Sequence[ShapeT]) -> SavedTensors:
    """The inputs are combined pairwise, in order (torch 2.13). A product's or a maximum's
    gradient reads both operands: every input, and each partial result before the last. A sum
    or difference reads none, its partial result gone once the next exists (one output's worth
    for a moment), as a mean's sum is once divided. A maximum's backward splits the gradient of
    ties in halves and masks the rest: half the gradient and two masks at once. Each partial
    result kept goes as its gradient is made, before the last inputs' gradients are: its
    backward holds that much less than it keeps (a negative figure; a product of three was 12 %
    over, of four 19 %, counting them to the end; measured as in a graph)."""
    mode, size = params["mode"], numel(outs[0]) if outs else 0
    partials = max(0, len(shapes) - 2)
    if mode == "mul":
        return SavedTensors(ports=tuple(f"in{i}" for i in range(len(shapes))), values=partials * size,
                            backward_values=-partials * size)
    if mode == "max":
        return SavedTensors(ports=tuple(f"in{i}" for i in range(len(shapes))), values=partials * size,
                            backward_values=size * (1 - partials), backward_flags=2 * size)
    if mode == "mean" or (mode in ("add", "sub") and partials):
        return SavedTensors(forward_values=size)
    return SavedTensors()


MERGE = NodeSpec(
    type_id="Merge", category="Structure",
    shape_rule="inputs of one shape give that shape (concat: sizes add along the channel axis; stack: "
               "a new axis after the batch)",
    memory_note="mul keeps its inputs, max a mask of the winners; add, sub, mean, concat and stack "
                "keep nothing.",
    examples=(({"mode": "add", "inputs": 2}, ((16, 8), (16, 8))),),
    releasable_output=_merge_releasable,
    help="Combines n equal-shaped tensors elementwise (add, sub = in0 - in1 - ..., mul, mean, max), "
         "joins them along the channels (concat) or stacks them on a new axis after the batch (stack). "
         "An add/sub Merge can form a reversible coupling.",
    params={
        "mode": Choice(default="add", options=MERGE_MODES, help="How to combine the inputs."),
        "inputs": Int(default=2, min=2, max=MAX_PORTS, help="Number of inputs."),
    },
    inputs=_count_rule("in", "inputs", 2), outputs=("out",),
    infer=_merge_infer, count_params=lambda ctx: 0,
    build=builder("Merge", lambda ctx: recipe("structure", "Merge", mode=ctx.params["mode"])),
    fresh_output=True,
    saved_for_backward=_merge_saved,
    key_params=("mode",),
)

SPECS = (FLATTEN, RESHAPE, SPLIT, CONCAT, MERGE)
