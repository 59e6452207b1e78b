"""Every node's layer in a compiled model, named as the diagnostics name nodes.

A top-level node by its id; a node inside a group body by the body's module path and its id
(``steps.blocks.3/ic``: copy 3 of the Repeat ``steps``, node ``ic``), as ``revstudio gradcheck``
names them. Reversible regions call these layers inside the runtime, so the model's direct
children alone (a region's Repeat among them) would never show which one misbehaved.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def node_layers(model: Any) -> Iterator[tuple[str, str, Any, str]]:
    """(name, node type, layer, top) of each node with a layer in ``model``, outer plans first
    and in each plan's order (a coupling's F before its Merge); ``top`` is the id of the
    top-level node it is part of (its own for a top-level node)."""
    root = getattr(model, "_plan", None)
    tops = {op.module: op.node for op in _node_ops(root.ops)} if root is not None else {}
    for path, executor in model.named_modules():
        plan = getattr(executor, "_plan", None)
        if plan is None:
            continue
        for op in _node_ops(plan.ops):
            layer = getattr(executor, op.module, None)
            if layer is not None:
                name = f"{path}/{op.node}" if path else op.node
                yield name, op.type, layer, tops.get(path.split(".", 1)[0], op.node) if path else op.node


def _node_ops(ops: Any) -> Iterator[Any]:
    """A plan's NodeOps in order: a region's steps, a wired coupling's F and then its Merge."""
    from revstudio.compiler.plan import CouplingOp, NodeOp, RegionOp

    for op in ops:
        for step in (op.steps if isinstance(op, RegionOp) else [op]):
            yield from (n for n in (step.body if isinstance(step, CouplingOp) else [step]) if isinstance(n, NodeOp))
