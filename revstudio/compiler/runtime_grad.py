"""Vector-Jacobian products for the reversible backward, without autograd.grad's Python layer.

Every coupling's backward asks autograd for F's gradients once: on a small model that is a
call per step of a few microseconds of work, and ``torch.autograd.grad`` spends about 20 us
around it (argument normalisation, a shape check of each seed through torch's symbolic
shape helpers, the logging and compiler-context bookkeeping of ``_engine_run_backward``),
2-3 % of a tiny model's step (benchmarks/README.md). Where the call is an ordinary one
(plain tensors and parameters, seeds the runtime made to match its roots), the engine is
called directly, as ``autograd.grad`` itself ends up doing; anything else (a tensor
subclass that overrides torch functions, a torch without the entry point) goes through
``torch.autograd.grad`` as before. The engine still checks each seed against its root's
shape and dtype, so a wrong seed fails the same way.
"""

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

_engine: Any = getattr(getattr(torch.autograd, "Variable", None), "_execution_engine", None)
_run_backward: Any = getattr(_engine, "run_backward", None)
_plain = (torch.Tensor, nn.Parameter)
_Edge: Any = getattr(torch.autograd.graph, "GradientEdge", ())  # (older torch: none; never matches)


def _ordinary(tensors: Sequence[Any]) -> bool:
    return all(type(t) in _plain for t in tensors)


def vjp(roots: Sequence[Any], inputs: Sequence[torch.Tensor],
        seeds: Sequence[torch.Tensor]) -> "tuple[torch.Tensor | None, ...]":
    """``torch.autograd.grad(roots, inputs, seeds, allow_unused=True)``: the gradients of
    ``roots`` (tensors or gradient edges) seeded with ``seeds``, for ``inputs`` (None where
    an input is unused); the graph is freed, nothing is accumulated into ``.grad``."""
    roots, inputs, seeds = tuple(roots), tuple(inputs), tuple(seeds)
    held = [(t, t._backward_hooks) for t in inputs if t._backward_hooks]
    if held:
        return _without_hooks(held, roots, inputs, seeds)
    if (_run_backward is None or not inputs or len(seeds) != len(roots)
            or not _ordinary(inputs) or not _ordinary(seeds)
            or not all(type(r) in _plain or isinstance(r, _Edge) for r in roots)):
        return torch.autograd.grad(roots, inputs, seeds, allow_unused=True)
    # (outputs, grad_outputs, keep_graph, create_graph, inputs, allow_unreachable, accumulate_grad)
    return tuple(_run_backward(roots, seeds, False, False, inputs, True, False))


def _without_hooks(held: Sequence[tuple[torch.Tensor, Any]], roots: Sequence[Any], inputs: Sequence[torch.Tensor],
                   seeds: Sequence[torch.Tensor]) -> "tuple[torch.Tensor | None, ...]":
    """The vjp with the gradient hooks of ``inputs`` (``weight.register_hook``) held back.

    Autograd runs a tensor's hooks whenever a gradient is taken for it, also inside this
    internal vjp; the region then returns that gradient to the weight, whose hooks run again
    there: each hook ran twice per backward, and one that rescales (``lambda g: g * 2``)
    rescaled twice. Held back here, they run once, on the region's whole gradient, as in
    standard mode."""
    for t, _ in held:
        t._backward_hooks = None
    try:
        return vjp(roots, inputs, seeds)
    finally:
        for t, hooks in held:
            t._backward_hooks = hooks  # (the same dict: hooks added or removed later still count)
