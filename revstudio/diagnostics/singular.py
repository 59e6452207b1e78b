"""Which layer made a linear solve fail: an InvConv1x1 whose matrix is no longer invertible.

Reversible mode rebuilds an InvConv1x1's input with the inverse of its matrix. Weights that
diverge (a learning rate too high) can drive that matrix to singular in the model's dtype (with
``lu``, a diagonal entry exp(log_s) that underflows to 0), and torch's ``linalg.inv`` then raises
deep inside backward. :func:`singular_layers` names the nodes whose matrix is singular, as the
gradient check names nodes (``<module path>/<node id>`` inside group bodies), and
:func:`singular_message` turns the failure into one sentence that says what to do.
"""
from __future__ import annotations

from typing import Any

import torch


class SingularLayer(Exception):
    """A layer's inverse failed on a singular matrix; the message names the node and what to do."""


def singular_layers(model: Any) -> list[str]:
    """The InvConv1x1 nodes of ``model`` (a compiled module) whose matrix torch cannot invert."""
    from revstudio.compiler.plan import NodeOp, RegionOp

    found: list[str] = []
    for path, executor in model.named_modules():
        plan = getattr(executor, "_plan", None)
        if plan is None:
            continue
        ops: list[Any] = []
        for op in plan.ops:
            ops.extend(op.steps if isinstance(op, RegionOp) else [op])
        for op in ops:
            if not isinstance(op, NodeOp) or op.type != "InvConv1x1":
                continue
            layer = getattr(executor, op.module, None)
            if layer is None or not callable(getattr(layer, "matrix", None)):
                continue
            with torch.no_grad():
                w = layer.matrix()
                w = w.float() if w.dtype in (torch.float16, torch.bfloat16) else w
                info = torch.linalg.inv_ex(w)[1]
                if bool(info.ne(0).any()) or not bool(torch.isfinite(w).all()):
                    found.append(f"{path}/{op.node}" if path else op.node)
    return found


def is_singular_error(exc: BaseException) -> bool:
    """Whether ``exc`` is torch's refusal to invert a singular matrix."""
    return isinstance(exc, torch.linalg.LinAlgError) or (
        isinstance(exc, RuntimeError) and "singular" in str(exc) and "linalg" in str(exc))


def singular_message(model: Any, where: str, advice: str) -> tuple[str | None, str]:
    """(the first singular node or None, a message): ``where`` says when it happened
    ("at step 12"), ``advice`` what to try."""
    nodes = singular_layers(model)
    dtype = next((str(p.dtype).replace("torch.", "") for p in model.parameters()), "its dtype")
    if nodes:
        more = f" (and {', '.join(repr(n) for n in nodes[1:4])})" if len(nodes) > 1 else ""
        what = (f"the 1x1 matrix of InvConv1x1 node {nodes[0]!r}{more} became singular in {dtype} {where}: "
                "its weights diverged, so reversible mode cannot rebuild the node's input from its output")
    else:
        what = (f"a matrix became singular in {dtype} {where}, so reversible mode cannot rebuild a layer's "
                "input from its output")
    return (nodes[0] if nodes else None), f"{what}. {advice}"
