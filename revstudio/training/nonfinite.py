"""A finite loss whose gradients are NaN or Inf: found before the optimizer writes them into the weights.

In reversible mode backward rebuilds each layer's input from its output with the layer's inverse;
an AffineCoupling whose log-scale underflows exp() (``clamp`` 0, a scale of exp(-200) = 0 in
float32) has a finite output but an inverse of 0 * inf = NaN. The loss stays finite, the step
writes NaN into every weight, and the next step's loss is reported NaN with the blame on whatever
layer comes first. :func:`grads_finite` catches it at the step it happens (one fused norm over the
gradients); :func:`nonfinite_grads_message` names the layer whose inverse does not undo its forward.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch


def grads_finite(model: torch.nn.Module) -> bool:
    """Whether every parameter gradient is finite: one fused norm per tensor, no copy of the
    gradients (about 140 us a step on the digits example's CPU step of 8 ms, benchmarks/README.md)."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        return True
    return bool(torch.stack(torch._foreach_norm(grads)).isfinite().all())


def nonfinite_grads_message(model: Any, xs: Sequence[torch.Tensor], step: int, mode: str, kept: str,
                            lr: float) -> tuple[str | None, str]:
    """(the node whose inverse breaks, or None; the message of the ``nan`` row)."""
    node = None
    if mode == "reversible" and getattr(model, "regions", None):
        from revstudio.diagnostics.gradcheck import node_inversion_errors

        before = model.mode
        try:
            model.mode = "standard"
            errors, types = node_inversion_errors(model, list(xs))
        except Exception:  # noqa: BLE001 - the search is best effort
            errors, types = {}, {}
        finally:
            model.mode = before
        broken = [n for n, e in errors.items() if not math.isfinite(e)]
        if broken:
            node = broken[0]
            kind = types.get(node, "layer")
            hint = (" (its log-scale under- or overflows exp(): give the node a clamp above 0)"
                    if kind == "AffineCoupling" else "")
            msg = (f"the gradients became NaN or Inf at step {step} while the loss stayed finite: reversible mode's "
                   f"backward rebuilt non-finite values, because the inverse of node {node!r} ({kind}) does not "
                   f"undo its forward at these weights{hint}; {kept}. Try --mode checkpoint, which does not "
                   f"invert it, or a lower --lr (now {lr:g})")
            return node, msg
    msg = (f"the gradients became NaN or Inf at step {step} while the loss stayed finite; {kept}. Try a lower "
           f"--lr (now {lr:g}) or gradient clipping" +
           (", or --mode checkpoint (reversible mode rebuilds each layer's input with its inverse; "
            "`revstudio gradcheck` at the last checkpoint says which one breaks)" if mode == "reversible" else ""))
    return node, msg


def _top(model: Any, name: str) -> str:
    """The top-level node id that the node named ``name`` (``<module path>/<id>``) is part of."""
    from revstudio.diagnostics.node_layers import node_layers

    return next((top for n, _, _, top in node_layers(model) if n == name), name)


def kept_checkpoint(run: Any) -> str:
    """What a run that stops now leaves behind (``run``: the loop's run state)."""
    import os

    from .runs import CHECKPOINT

    saved = run.run_dir is not None and os.path.isfile(os.path.join(run.run_dir, CHECKPOINT))
    return "the last good checkpoint stays" if saved else "no checkpoint was saved before it"


def bad_grads(run: Any, model: Any, xs: Sequence[torch.Tensor], step: int, finish: Callable[..., Any]) -> Any:
    """The ``nan`` row of a step whose loss is finite but whose gradients are not; the run ends."""
    from revstudio.diagnostics.coupling_init import identity_start_advice

    inner, msg = nonfinite_grads_message(model, xs, step, run.cfg.mode, kept_checkpoint(run), run.cfg.lr)
    msg += identity_start_advice(run.graph)
    node = _top(model, inner) if inner is not None else None
    run.emit({"kind": "event", "event": "nan", "step": step, "node": node, "inner_node": inner, "message": msg})
    return finish("nan", msg)


def singular(run: Any, model: Any, step: int, finish: Callable[..., Any]) -> Any:
    """The ``nan`` row of a step whose backward met an InvConv1x1 matrix gone singular; the run ends."""
    from revstudio.diagnostics.singular import singular_message

    kept = kept_checkpoint(run)
    node, inner, msg = singular_message(model, f"at step {step}", f"{kept[0].upper()}{kept[1:]}. Try a lower "
                                        f"--lr (now {run.cfg.lr:g}) or gradient clipping, or --mode checkpoint, "
                                        "which does not invert the layer")
    run.emit({"kind": "event", "event": "nan", "step": step, "node": node, "inner_node": inner, "message": msg})
    return finish("nan", msg)
