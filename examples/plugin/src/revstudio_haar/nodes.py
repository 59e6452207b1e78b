"""The node types of revstudio-haar, declared once each as a revstudio NodeSpec.

This file imports no torch: revstudio loads it to fill its palette and check
shapes, and only ``build`` (called when a model is compiled) imports the torch
modules.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import prod
from typing import Any

from revstudio.core.params import Float
from revstudio.core.spec import BuildContext, InferContext, NodeSpec, SavedTensors, ShapeError, ShapeT


def _haar_infer(ctx: InferContext) -> dict[str, ShapeT]:
    shape = ctx.input("in")
    if len(shape) != 3:
        raise ShapeError(f"HaarDownsample {ctx.node_id}: needs a (C, H, W) input, got "
                         f"{'x'.join(map(str, shape))}; add a Reshape before it", "in")
    c, h, w = shape
    if h % 2 or w % 2:
        raise ShapeError(f"HaarDownsample {ctx.node_id}: height and width must be even, got {h}x{w}; "
                         "change the input size or pad it", "in")
    return {"out": (4 * c, h // 2, w // 2)}


def _haar_build(ctx: BuildContext) -> Any:
    from .haar import HaarDownsample

    return HaarDownsample(channels=ctx.in_shapes[0][0])


def _leaky_infer(ctx: InferContext) -> dict[str, ShapeT]:
    return {"out": ctx.input("in")}


def _leaky_saved(params: Mapping[str, Any], shapes: Sequence[ShapeT], outs: Sequence[ShapeT]) -> SavedTensors:
    """torch.where's backward reads only its condition, the bool mask of the negative inputs. The
    forward holds slope * x for a moment, and the backward one branch's gradient beside the
    gradients (measured by revstudio's tests/nodes/test_saved_for_backward.py)."""
    size = prod(shapes[0])
    return SavedTensors(flags=size, forward_values=size, backward_values=size)


def _haar_saved(params: Mapping[str, Any], shapes: Sequence[ShapeT], outs: Sequence[ShapeT]) -> SavedTensors:
    """Slices, sums and a join: its backward reads nothing. Its forward holds the four bands
    before it joins them (an input's worth); its backward gathers each band's gradient into a zero
    image of the input's size, one and a half inputs' worth beyond the gradients at once
    (measured)."""
    size = prod(shapes[0])
    return SavedTensors(forward_values=size, backward_values=3 * size // 2)


def _leaky_build(ctx: BuildContext) -> Any:
    from .leaky import InvertibleLeakyReLU

    return InvertibleLeakyReLU(slope=ctx.params["slope"])


HAAR = NodeSpec(
    type_id="HaarDownsample", category="Invertible", title="Haar downsample",
    help="Orthonormal Haar wavelet step: each 2x2 patch becomes four channels (average and three "
         "details), (C, H, W) -> (4C, H/2, W/2). Invertible, volume preserving, no weights.",
    params={},
    inputs=("in",), outputs=("out",),
    infer=_haar_infer, count_params=lambda ctx: 0, build=_haar_build,
    invertible=True,
    fresh_output=True,  # torch.cat makes new memory, and the backward of the sums does not read it
    saved_for_backward=_haar_saved,
    examples=(({}, ((3, 4, 4),)), ({}, ((2, 2, 6),))),
)

LEAKY = NodeSpec(
    type_id="InvertibleLeakyReLU", category="Invertible", title="Invertible leaky ReLU",
    help="x for x >= 0 and slope * x below: a leaky ReLU with a positive slope is a bijection, so "
         "it can sit inside a reversible region. Reports its log-determinant for flows.",
    params={"slope": Float(default=0.1, min=0.001, max=1000.0, help="Slope below zero (positive).")},
    inputs=("in",), outputs=("out",),
    infer=_leaky_infer, count_params=lambda ctx: 0, build=_leaky_build,
    saved_for_backward=_leaky_saved,
    fresh_output=True,  # torch.where makes new memory; its backward reads only the mask
    invertible=True, key_params=("slope",),
    examples=(({"slope": 0.2}, ((3, 4, 4),)), ({}, ((5,),))),
)

SPECS = [HAAR, LEAKY]
