"""What a training batch cannot do: a batch Norm that would see one value per channel.

Training normalises each channel of a batch Norm over the batch and the positions; with a
single value there (a batch of one sample of a flat (C) input, or of a (C, 1, 1) one) torch
refuses the step ("Expected more than 1 value per channel when training"). The shapes and the
batch say so before anything runs, so ``full_check`` reports it naming the node (inside a group,
the node that runs the group). Evaluation reads the running statistics and is not affected.
Torch-free.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from math import prod
from typing import Any

from revstudio.core.diagnostics import Diagnostic, error
from revstudio.core.graph import Graph
from revstudio.core.spec import registry
from revstudio.core.validate import group_refs


def _lone_norms(graph: Graph, nodes: Mapping[str, Any], bodies: Mapping[str, Any], seen: set[str],
                where: str) -> Iterator[tuple[str, str, Any]]:
    """(node id, where it is, its input shape) of each batch Norm among ``nodes`` of ``graph``
    (and in the groups they run: ``bodies`` are their analyses) that sees a single value per
    channel and sample."""
    groups = getattr(graph, "groups", None) or {}
    for nid, info in nodes.items():
        node = graph.nodes.get(nid)
        if node is None:
            continue
        if info.type == "Norm" and node.params.get("kind", "batch") == "batch":
            shape = (info.inputs or {}).get("in")
            if shape and prod(shape[1:]) == 1:
                yield nid, where, shape
        spec = registry.find(info.type)
        for _, name in group_refs(spec, node.params) if spec is not None else ():
            body, analysis = groups.get(name), bodies.get(name)
            if body is None or analysis is None or name in seen:
                continue
            seen.add(name)  # (shapes from a group's first use, as its tab shows them)
            yield from _lone_norms(body, analysis.nodes, bodies, seen, f"{where}group {name!r} / ")


def batch_errors(graph: Graph, report: Any, batch: int) -> list[Diagnostic]:
    """Errors for the batch Norms that a training step of ``batch`` samples cannot normalise,
    each at the node of ``graph`` that is or runs the Norm."""
    if batch > 1:
        return []
    found = []
    bodies = getattr(report, "groups", None) or {}
    for nid, info in (getattr(report, "nodes", None) or {}).items():
        for lone, where, shape in _lone_norms(graph, {nid: info}, bodies, set(), ""):
            shown = "x".join(str(s) for s in shape)
            found.append(error(nid, f"{where}Norm {lone}: batch norm of {shown} sees one value per channel "
                                    f"in a training batch of {batch}, which torch cannot normalise; train with "
                                    "a batch of 2 or more, or use kind layer or group"))
    return found
