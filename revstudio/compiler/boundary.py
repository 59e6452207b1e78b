"""The compiled model's boundary: what callers pass in, and where the weights may live.

:func:`check_inputs` runs on every forward (a few attribute reads per input;
torch.compile turns them into guards) and names the Input node, the shape, dtype
or device it expected and what to do. :func:`size_hint`, :func:`dtype_hint` and :func:`lone_norm_hint` explain, after
the layers have failed, which Input got sizes or a number type they do not accept.
:func:`resolve_device` turns ``compile(device=...)`` into a device that exists here.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from revstudio.core.graph import Graph

from .plan import CompileError, Plan
from .runtime_boundary import check_batch, check_count, check_returned, dtype_words


def by_name(plan: Plan, inputs: Sequence[Any], named: Mapping[str, Any]) -> tuple[Any, ...]:
    """The inputs in forward's order, those after ``inputs`` given by keyword under their Input
    node's id (``model(image=x)``, as the exported ``Model.forward`` takes them); another count
    or a name no Input node after them has is refused naming the Input nodes in order."""
    ids = [op.node for op in sorted(plan.inputs, key=lambda o: o.index)]
    check_count(plan.name, _specs(plan), inputs, named, ids)
    return (*inputs, *(named[node] for node in ids[len(inputs):]))


def _specs(plan: Plan) -> dict[str, tuple[Any, torch.dtype]]:
    return {op.node: (op.shape, getattr(torch, op.dtype, torch.float32))
            for op in sorted(plan.inputs, key=lambda o: o.index)}


def check_inputs(plan: Plan, device: torch.device, dtype: torch.dtype | None, inputs: Sequence[Any],
                 named: Mapping[str, Any] | None = None) -> None:
    """The model's boundary: one tensor per Input node (by position; ``named``: what came by
    keyword, which :func:`by_name` has put in place before), of its rank, channels, kind and device.

    A few attribute reads per input (it runs every step; torch.compile turns them into
    guards). Sizes other than the channels may differ where the layers allow (fully
    convolutional); when they do not, :func:`size_hint` names the Input node.
    """
    expected = sorted(plan.inputs, key=lambda o: o.index)
    specs = _specs(plan)
    if len(inputs) != len(expected) or named:
        check_count(plan.name, specs, inputs, named or {}, [op.node for op in expected])
    check_batch(specs, {op.node: inputs[op.index] for op in expected}, dtype, device)


def check_outputs(plan: Plan, device: torch.device, dtype: torch.dtype | None, outputs: Sequence[Any]) -> None:
    """``model.inverse``'s boundary (:func:`runtime_boundary.check_returned`), with the shape
    each Output node gets where the plan knows it and the weights' number type (None: any)."""
    ops = sorted(plan.outputs, key=lambda o: o.index)
    check_returned(output_shapes(plan), {op.node: outputs[op.index] for op in ops}, device, dtype)


def outputs_given(plan: Plan, outputs: Sequence[Any], named: Mapping[str, Any]) -> tuple[Any, ...]:
    """``model.inverse``'s tensors in forward's order, those after ``outputs`` given by keyword under
    their Output node's id (``model.inverse(z=z)``, as the exported ``Model.inverse`` takes them);
    another count or a name no Output node after them has is refused naming them in order."""
    ids = [op.node for op in sorted(plan.outputs, key=lambda o: o.index)]
    if len(outputs) + len(named) == len(ids) and set(named) <= set(ids[len(outputs):]):
        return (*outputs, *(named[node] for node in ids[len(outputs):]))
    got = f"{len(outputs)}" + (f" and {', '.join(map(repr, named))} by name" if named else "")
    raise TypeError(f"{plan.name}: inverse expects {len(ids)} tensor(s), one per Output node in this order: "
                    f"{', '.join(map(repr, ids))}; got {got}. Pass them by position or by name: "
                    f"model.inverse({', '.join(ids)})")


def output_shapes(plan: Plan) -> dict[str, tuple[int, ...] | None]:
    """Output node id -> the shape (without the batch axis) it gets, None where unknown."""
    shapes = {v: shape for op in plan.node_ops() for v, shape in zip(op.outputs, op.out_shapes)}
    return {op.node: shapes.get(op.input) for op in plan.outputs}


def size_hint(plan: Plan, inputs: Sequence[torch.Tensor]) -> str | None:
    """Which Input got other sizes than it declares, once the layers have failed on them."""
    for op in sorted(plan.inputs, key=lambda o: o.index):
        got = tuple(inputs[op.index].shape[1:])
        if got != tuple(op.shape):
            want = ", ".join(map(str, op.shape))
            return (f"input {op.node!r} has shape {tuple(inputs[op.index].shape)} but its Input node declares "
                    f"(batch, {want}), and the layers do not accept the other sizes")
    return None


def lone_norm_hint(model: torch.nn.Module, inputs: Sequence[torch.Tensor], exc: Exception) -> str | None:
    """torch's "Expected more than 1 value per channel when training" in words: which batch Norm
    nodes see a single value per channel in this batch (``full_check`` says so of a batch of one
    before anything runs; a caller's own loop meets it at its last, short batch) and what to do."""
    if "more than 1 value per channel" not in str(exc) or not inputs or inputs[0].dim() == 0:
        return None
    batch = inputs[0].shape[0]
    lone = []
    for module in model.modules():
        plan = getattr(module, "_plan", None)
        if not isinstance(plan, Plan):
            continue
        where = "" if module is model else f"group {plan.name!r} / "
        for op in plan.node_ops():
            layer = getattr(module, op.module, None)
            shape = op.in_shapes[0] if op.in_shapes else ()
            per_channel = batch
            for size in shape[1:]:
                per_channel *= size if isinstance(size, int) else 2  # (a size left open counts as several)
            if op.type == "Norm" and op.params.get("kind", "batch") == "batch" and per_channel == 1 \
                    and getattr(layer, "training", False):
                lone.append(f"{where}node {op.node!r}")
    if not lone:
        return None
    return (f"{', '.join(dict.fromkeys(lone))} (Norm, kind batch) sees one value per channel in this training "
            f"batch of {batch}, which torch cannot normalise; pass a batch of 2 or more (drop_last=True in a "
            "DataLoader), call model.eval() to run on the running statistics, or use Norm kind layer or group")


def dtype_hint(plan: Plan, dtype: torch.dtype, inputs: Sequence[torch.Tensor]) -> str | None:
    """Which Input got another number type than the model's weights, once the layers have
    failed on it (torch's own words name neither the Input nor the cure)."""
    for op in sorted(plan.inputs, key=lambda o: o.index):
        got = inputs[op.index].dtype
        if got != dtype:
            return dtype_words(op.node, got, dtype)
    return None


def check_report(graph: Graph, report: Any) -> None:
    """``compile(graph, report=...)``: a check report (``rs.check``) of this graph as it is now.
    One made before an edit holds the old shapes, which would build layers that do not fit
    together (a failure inside torch at the first forward, naming no node)."""
    from revstudio.core.check import Report

    if not isinstance(report, Report):
        raise TypeError(f"rs.compile: report must be what rs.check(graph) returns, got "
                        f"{type(report).__name__}; leave it out and compile checks the graph itself")
    if report.checked is None:
        return  # (the core check's report, which the compiler's own callers pass fresh)
    from revstudio.diagnostics.check_memo import another_graph, changed_since

    others = another_graph(graph, report.checked)
    if others is not None:  # (a notebook holding several projects passed the wrong one's report)
        raise CompileError(f"{graph.name}: the report is of another graph (only {others[0]} of its {others[1]} "
                           "nodes are in this one); pass this graph's own, rs.compile(graph, "
                           "report=rs.check(graph)), or leave report out")
    change = changed_since(graph, report.checked)
    if change is not None:
        raise CompileError(f"{graph.name}: the report is of an earlier state of the graph ({change} since "
                           "rs.check made it); check again, rs.compile(graph, report=rs.check(graph)), "
                           "or leave report out")


def resolve_device(device: Any) -> torch.device:
    """``device`` (None or "auto": CUDA when there is one) as a torch.device that exists here; the
    names are checked as ``rs.check`` and the CLI take them (``device_probe.device_name``)."""
    from revstudio.diagnostics.device_probe import device_name

    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device_name(device, "rs.compile", "None for CUDA when there is one, else the CPU")
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as exc:
        words = str(exc) if str(exc).startswith("rs.compile:") else \
            f"rs.compile: device {device!r} is not a device torch knows; use 'auto', 'cpu', 'cuda' or 'cuda:N'"
        raise CompileError(words) from None
    from .devices import DeviceUnavailable, usable_device

    try:
        return usable_device(dev)
    except DeviceUnavailable as exc:
        todo = "one of those" if exc.index else "device='cpu' or 'auto'"
        raise CompileError(f"device {device!r}: {exc}; use {todo}") from None


def cuda_devices(inputs: Sequence[torch.Tensor]) -> list[torch.device]:
    """The CUDA devices among the inputs' (whose random streams an initialisation pass forks)."""
    return sorted({x.device for x in inputs if x.device.type == "cuda"}, key=str)
