"""Values read in another axis order than their memory lies in, and the layers that copy them.

A Permute of kind axes hands on a view of its input with its axes reordered, no copy. Most
layers read such a view as it is (a Conv, BiRNN, Norm or activation: measured, they keep the
same bytes as for a contiguous input); a Reshape or Flatten of it cannot be a view, so torch
copies it, and a Linear, which flattens its input, keeps that copy for its weight's gradient
(``tests/diagnostics/test_permute_axes_estimate.py`` holds the estimate to the measured peak).
The estimate's walker asks :func:`copies_input` per node. Torch-free.
"""
from __future__ import annotations

from typing import Any

Value = tuple[str, str]

# types whose output views their input in the input's axis order (a Split's parts keep it)
_KEEPS_ORDER = frozenset({"Split", "GroupOutput"})
COPYING = frozenset({"Reshape", "Flatten", "Linear"})  # they flatten or reshape what they read


def axis_order(walker: Any, value: Value, params_of: Any) -> tuple[int, ...] | None:
    """For each axis of ``value`` (batch excluded), the axis of the memory it lies in it reads;
    None where it lies in order (memory of its own, or a view in its input's order)."""
    for _ in range(10_000):
        nid, port = value
        info = walker.report.nodes.get(nid)
        if info is None or not info.ok:
            return None
        src = walker.source.get((nid, "in"))
        if info.type == "Permute":
            params = params_of(walker.graph, nid)
            if params.get("kind") != "axes" or src is None:
                return None
            dims = tuple(int(d) for d in params.get("dims", ()))
            inner = axis_order(walker, (src.node, src.port), params_of) or tuple(range(len(dims)))
            if len(inner) != len(dims):
                return None
            return tuple(inner[d] for d in dims)
        if info.type not in _KEEPS_ORDER or src is None:
            return None
        value = (src.node, src.port)
    return None  # pragma: no cover - a cycle; the check already reports it


def scrambled(walker: Any, value: Value, params_of: Any) -> bool:
    """Whether ``value`` is a view whose axes of more than one element are out of order: a
    reshape of it is a copy."""
    order = axis_order(walker, value, params_of)
    if order is None:
        return False
    info = walker.report.nodes.get(value[0])
    shape = info.outputs.get(value[1]) if info is not None else None
    if shape is None or len(shape) != len(order):
        return False
    used = [axis for axis, size in zip(order, shape) if size > 1]
    return used != sorted(used)


def copies_input(walker: Any, nid: str, params_of: Any) -> bool:
    """Whether node ``nid`` (a Reshape, Flatten or Linear) reshapes a scrambled view: its
    reshape is a copy of its input, memory of its own."""
    info = walker.report.nodes.get(nid)
    if info is None or info.type not in COPYING:
        return False
    if info.type == "Linear" and len(info.inputs.get("in") or ()) < 2:
        return False  # a vector: nothing to flatten
    src = walker.source.get((nid, "in"))
    return src is not None and scrambled(walker, (src.node, src.port), params_of)
