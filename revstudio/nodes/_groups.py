"""Looking inside group bodies: their boundary ports and their inferred shapes.

A body's inputs are its ``GroupInput`` nodes and its outputs its ``GroupOutput``
nodes, in node order, named by their ``port`` param. Group, Repeat and the
couplings use these helpers for ports, shape checks and parameter counts.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from revstudio.core.spec import Groups, GroupShapes, InferContext, ShapeError, ShapeT

from ._common import fmt, problem

PORT_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
DEFAULT_PORT = {"GroupInput": "in", "GroupOutput": "out"}


def boundary_ports(body: Any, node_type: str) -> list[str]:
    """The ``port`` names of a body's GroupInput or GroupOutput nodes, in node order."""
    ports = []
    for node in body.nodes.values():
        if node.type == node_type:
            port = node.params.get("port", DEFAULT_PORT[node_type])
            ports.append(port if isinstance(port, str) else str(port))
    return ports


def body_of(groups: Groups, name: Any) -> Any:
    return groups.get(name) if isinstance(name, str) else None


def ports_rule(node_type: str) -> Callable[[Mapping[str, Any], Groups], list[str]]:
    """A spec's ports rule reading the ``group`` param's body; no body, no ports."""

    def rule(params: Mapping[str, Any], groups: Groups) -> list[str]:
        body = body_of(groups, params.get("group"))
        return boundary_ports(body, node_type) if body is not None else []

    return rule


def check_body(kind: str, ctx: InferContext, param: str) -> tuple[list[str], list[str]]:
    """The body named by ``param`` must exist with unique, valid boundary port names."""
    name = ctx.params[param]
    body = body_of(ctx.groups, name)
    if body is None:
        known = ", ".join(sorted(ctx.groups)) or "none yet"
        if not name:  # a node just placed: its group not picked yet
            raise problem(kind, ctx, f"{param}: no group is chosen (groups: {known}); pick one in the "
                                     "inspector or create one by grouping nodes")
        raise problem(kind, ctx, f"{param}: there is no group {name!r} in this project (groups: {known}); "
                                 "pick one or create it by grouping nodes")
    ins, outs = boundary_ports(body, "GroupInput"), boundary_ports(body, "GroupOutput")
    for what, ports in (("GroupInput", ins), ("GroupOutput", outs)):
        for port in ports:
            if not PORT_PATTERN.match(port):
                raise problem(kind, ctx, f"group {name!r}: {what} port name {port!r} is not allowed; "
                                         "use letters, digits and _ (e.g. in0)")
        if len(set(ports)) != len(ports):
            raise problem(kind, ctx, f"group {name!r} has two {what} nodes named {ports!r}; "
                                     "give each a different port name")
    if not outs:
        raise problem(kind, ctx, f"group {name!r} has no GroupOutput node; add one for each result")
    return ins, outs


def infer_body(kind: str, ctx: InferContext, param: str, inputs: Mapping[str, ShapeT]) -> GroupShapes:
    """Infer the body named by ``param``; its errors are reported as this node's, with context."""
    name = ctx.params[param]
    if ctx.infer_group is None:
        raise problem(kind, ctx, f"cannot look inside group {name!r} here (no group inference available)")
    try:
        return ctx.infer_group(name, dict(inputs))
    except ShapeError as exc:
        given = ", ".join(f"{port} {fmt(shape)}" for port, shape in inputs.items())
        given = f"on {given}" if given else "without inputs (it has no GroupInput)"
        raise problem(kind, ctx, f"{param}: group {name!r} does not work {given}: {exc.message}") from None


def single_map(kind: str, ctx: InferContext, param: str, in_shape: ShapeT, role: str,
               want: ShapeT, why: str, hint: str = "") -> GroupShapes:
    """Check that the one-in/one-out body named by ``param`` maps ``in_shape`` to ``want``
    (``hint``: what else may fix a mismatch, after the message's own advice)."""
    ins, outs = check_body(kind, ctx, param)
    name = ctx.params[param]
    if len(ins) != 1 or len(outs) != 1:
        raise problem(kind, ctx, f"{param}: group {name!r} must have exactly one GroupInput and one "
                                 f"GroupOutput (it has {len(ins)} and {len(outs)})")
    result = infer_body(kind, ctx, param, {ins[0]: in_shape})
    got = result.outputs.get(outs[0])
    if got is None:
        raise problem(kind, ctx, f"{param}: group {name!r} produces no shape for {role}; fix the group body")
    if tuple(got) != tuple(want):
        raise problem(kind, ctx, f"{param}: group {name!r} maps {role} ({fmt(in_shape)}) to {fmt(got)}, "
                                 f"but {why} needs {fmt(want)}; make its last layer output {want[0]} "
                                 f"channels with the same spatial size{hint}")
    return result
