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

from revstudio.nodes.torch_modules.flows import ill_conditioned

from .node_layers import node_layers


class SingularLayer(Exception):
    """A layer's inverse failed on a singular matrix; the message names the node and what to do."""


def singular_layers(model: Any) -> list[tuple[str, str]]:
    """(name, top-level node id) of the InvConv1x1 nodes of ``model`` (a compiled module) whose
    matrix torch cannot invert."""
    found: list[tuple[str, str]] = []
    for name, type_id, layer, top in node_layers(model):
        if type_id != "InvConv1x1" or not callable(getattr(layer, "matrix", None)):
            continue
        with torch.no_grad():
            w = layer.matrix()
            w = w.float() if w.dtype in (torch.float16, torch.bfloat16) else w
            inv, info = torch.linalg.inv_ex(w)
            plain = not getattr(layer, "use_lu", True)  # (what its inverse refuses as nearly singular)
            if bool(info.ne(0).any()) or not bool(torch.isfinite(w).all()) or (plain and ill_conditioned(w, inv)):
                found.append((name, top))
    return found


def is_singular_error(exc: BaseException) -> bool:
    """Whether ``exc`` is torch's refusal to invert a singular matrix."""
    return isinstance(exc, torch.linalg.LinAlgError) or (
        isinstance(exc, RuntimeError) and "singular" in str(exc) and "linalg" in str(exc))


def singular_message(model: Any, where: str, advice: str) -> tuple[str | None, str | None, str]:
    """(the top-level node of the first singular layer and that layer's name, or None and None; a
    message): ``where`` says when it happened ("at step 12"), ``advice`` what to try."""
    found = singular_layers(model)
    nodes = [name for name, _ in found]
    dtype = next((str(p.dtype).replace("torch.", "") for p in model.parameters()), "its dtype")
    if nodes:
        more = f" (and {', '.join(repr(n) for n in nodes[1:4])})" if len(nodes) > 1 else ""
        what = (f"the 1x1 matrix of InvConv1x1 node {nodes[0]!r}{more} became singular (or nearly: too few correct digits in its inverse) in {dtype} {where}: "
                "its weights diverged, so reversible mode cannot rebuild the node's input from its output")
    else:
        what = (f"a matrix became singular in {dtype} {where}, so reversible mode cannot rebuild a layer's "
                "input from its output")
    top, name = (found[0][1], found[0][0]) if found else (None, None)
    return top, name, f"{what}. {advice}"
