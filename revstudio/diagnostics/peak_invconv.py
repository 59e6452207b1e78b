"""What an InvConv1x1 holds in its backward beyond its price (``save_rules._invconv``): the
moments of its 1x1 convolution's, its weight's (a product of LU factors, or a plain matrix
whose log-determinant torch.linalg.slogdet takes) and its log-determinant's backward, in a
reversible region's rerun (``UnitBuilder._moments``: :func:`rerun_backward`) and run as a layer
(``node_work``: :func:`layer_backward`).
Measured, torch 2.13 CPU. Torch-free.
"""
from __future__ import annotations

from typing import Any

from .estimate_walk import _prod


def rerun_backward(view: Any, elem: int, rebuilt_dense: bool = True) -> int:
    """What an InvConv1x1 a reversible region reruns holds in its backward beyond its price:
    :func:`lu_backward` in LU form, else :func:`plain_backward`."""
    if view.params.get("lu", True):
        return lu_backward(view, elem, rebuilt_dense)
    return plain_backward(view, elem, rebuilt_dense)


def lu_backward(view: Any, elem: int, rebuilt_dense: bool = True) -> int:
    """What an InvConv1x1 in LU form holds in its backward beyond what its forward kept (its
    factors' products, the weight, the copy of its input: ``save_rules._invconv``), its output's
    gradient and one output's worth. First the 1x1 convolution's backward, beside the weight and
    the input's copy, makes the weight's gradient (C x C); then, the weight and the copy gone,
    the product's backward makes its factors' gradients beside it, with the diagonal's from the
    log-determinant (three C x C more), before the parameter's own gradient exists (the region
    counts it). At 32 channels, batch 1 and 4x4 positions the second moment is the larger:
    random network 1 was 1.6 % under with the first alone. From a batch of two, the first
    moment also holds the rebuilt input beside the copy where the step after it hands it a dense
    stream (``rebuilt_dense``): the inverse rebuilds the input as a dense buffer
    (``flows._mix_channels_dense``), and the rerun's einsum multiplies a channels-first copy of
    it (at a batch of one the two are alike; network 1 at batch 2, under a budget whose rest
    peaks there, was 2.3 % under without it). Last in its region, its output is the einsum's
    channels-first product, and so is what its inverse rebuilds: the copy is the input."""
    shape = view.inputs["in"]
    matrix = int(shape[0]) ** 2 * elem
    copy = view.batch * _prod(shape) * elem if _prod(shape[1:]) > 1 else 0
    return max(matrix + (copy if view.batch > 1 and rebuilt_dense else 0), 2 * matrix - copy)


def unpack_bytes(view: Any, elem: int) -> int:
    """What an InvConv1x1 run as a layer makes in its backward before it unpacks what it saved:
    from a batch of two (with positions), its output is a view of the einsum's channels-major
    product, so the einsum's backward first copies the output's gradient into that order (one
    output's worth, ``ViewBackward0``). Where its unpacking starts a checkpoint's recompute, the
    recompute runs beside the copy: random skip network 48's segment of an ActNorm and an
    InvConv1x1 was 3.3 % under at batch 8 without it. The copy is the einsum backward's own
    input, so it lives on through that backward, after the recompute, beside the input's and the
    weight's gradients it makes (random skip network 103 at batch 2: 1.4 % under without it)."""
    shape = view.inputs.get("in") or ()
    if view.batch < 2 or _prod(shape[1:]) <= 1:
        return 0
    return view.batch * _prod(shape) * elem


def layer_backward(view: Any, elem: int, copied: bool = True) -> int:
    """What more an InvConv1x1 run as a layer (standard mode, a checkpointed segment) holds in
    its own backward than its saved tensors and its input's, output's and weight's gradients:
    :func:`lu_product_backward` in LU form, else :func:`plain_layer_backward` (which the copy
    its price counts does not change: ``copied``)."""
    if not view.inputs.get("in"):
        return 0
    if view.params.get("lu", True):
        return lu_product_backward(view, elem, copied)
    return plain_layer_backward(view, elem)


def lu_product_backward(view: Any, elem: int, copied: bool = True) -> int:
    """What more an InvConv1x1 in LU form holds in its own backward, as a layer (standard
    mode, a checkpointed segment), than its saved tensors and its input's, output's and
    weight's gradients: once the 1x1 convolution's backward is done (the weight it saved and
    its output's gradient gone; at a batch of one the copy it saved is its input), the product
    P L U's backward holds two of its three factors and the gradients of the two it multiplies
    beside the weight's (five C x C). Random network 106 (64 channels at 4x4, batch 1) was 6.3 %
    under without it. Net of the copy its price counts (``copied``); where it is not counted (a
    batch of one's copy, its input itself, counted beside a checkpointed segment's walk), one
    input's worth more."""
    matrix = int(view.inputs["in"][0]) ** 2 * elem
    return max(0, matrix - (2 if copied else 1) * view.batch * _prod(view.inputs["in"]) * elem)


def plain_layer_backward(view: Any, elem: int) -> int:
    """What more an InvConv1x1 with a plain weight holds in its own backward, as a layer
    (standard mode, a checkpointed segment), than its saved tensors and its input's, output's
    and weight's gradients: the einsum's backward hands the weight's gradient on as a view of
    a (1, C, C) product, which the weight's accumulation copies rather than keeps, so for a
    moment the gradient exists twice, once the einsum's saved copy of the input and the
    output's gradient are gone (measured, torch 2.13 CPU, a loss that does not read the
    log-determinant, as ``revstudio memory`` measures). Random network 229 (64 channels at 4x4,
    batch 1) was 5.8 % under in standard mode without it."""
    value = view.batch * _prod(view.inputs["in"]) * elem
    return max(0, int(view.inputs["in"][0]) ** 2 * elem - 2 * value)


def plain_backward(view: Any, elem: int, rebuilt_dense: bool = True) -> int:
    """What more an InvConv1x1 with a plain weight holds in its backward than its 1x1
    convolution's backward does (the step's price): the log-determinant's backward
    (``torch.linalg.slogdet``) runs first, while the rerun's graph is alive, and holds the LU
    factors the rerun saved and two C x C more, the diagonal's embedding and the solve (the
    weight's first gradient, which the region counts), where the convolution's backward holds
    one input's worth more. Above one input's worth, C x C makes that moment the larger: random
    network 104 (64 channels at 4x4) was 1.3 % under at batch 2 and 2.1 % at batch 1 without it.
    Else, from a batch of two, the convolution's backward holds the rebuilt input beside the
    copy (as :func:`lu_backward`'s, ``rebuilt_dense``): network 72's cut 8 at batch 2 was 1.8 %
    under without it (hidden until the outputs' gradients were released where the runtime
    releases them: ``peak_steps.spent_after``)."""
    matrix = int(view.inputs["in"][0]) ** 2 * elem
    value = view.batch * _prod(view.inputs["in"]) * elem
    dense = value if view.batch > 1 and rebuilt_dense and _prod(view.inputs["in"][1:]) > 1 else 0
    return max(matrix - value, dense)
