"""Gradient agreement: reversible against standard mode on the same weights and batch.

One compiled model, one random batch, training mode (dropout and batch
statistics active) with the random streams reset to the same seed before each
mode. The gradients of every parameter (matched by name) and every input are
compared, each as max |difference| normalised by the global gradient norm, and
the inversion error of every reversible region is read back from the runtime.
What it found is a ``grad_report.GradReport``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from revstudio.core.graph import Graph

from .grad_report import GradReport, TensorError
from .grad_report import summarize as summarize  # (re-exported: the CLI and notebooks import it here)
from .singular import SingularLayer, is_singular_error, singular_message

if TYPE_CHECKING:  # pragma: no cover
    import torch

TOLERANCE = {"float64": 1e-10, "float32": 1e-4}
KEYS_SHOWN = 6  # mismatching state_dict keys named in a message (then "and N more")
INPUT_SEED_OFFSET = 1_000_003  # inputs and the loss weights get a stream of their own


class StateMismatch(Exception):
    """Weights (e.g. a training checkpoint's) that do not fit the compiled graph; the message names the keys."""


def state_mismatch(expected: Mapping[str, Any], given: Mapping[str, Any]) -> str | None:
    """Why ``given`` cannot be loaded where ``expected`` (the model's ``state_dict``) is; None when it can."""
    problems = []
    missing = sorted(set(expected) - set(given))
    extra = sorted(set(given) - set(expected))
    if missing:
        problems.append(f"missing from it: {_names(missing)}")
    if extra:
        problems.append(f"not in the graph: {_names(extra)}")
    not_tensors = sorted(k for k in set(expected) & set(given) if not hasattr(given[k], "shape"))
    if not_tensors:
        problems.append(f"not tensors: {_names(not_tensors)}")
    shapes = [f"{k} is {list(given[k].shape)} there, {list(expected[k].shape)} in the graph"
              for k in sorted(set(expected) & set(given))
              if hasattr(given[k], "shape") and tuple(given[k].shape) != tuple(expected[k].shape)]
    if shapes:
        more = f" and {len(shapes) - KEYS_SHOWN} more" if len(shapes) > KEYS_SHOWN else ""
        problems.append("other shapes: " + "; ".join(shapes[:KEYS_SHOWN]) + more)
    return "; ".join(problems) or None


def _names(keys: list[str]) -> str:
    more = f" and {len(keys) - KEYS_SHOWN} more" if len(keys) > KEYS_SHOWN else ""
    return ", ".join(keys[:KEYS_SHOWN]) + more




def torch_dtype(name: str) -> torch.dtype:
    import torch

    try:
        return {"float64": torch.float64, "float32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not supported here; use float64 or float32") from None


def input_nodes(graph: Graph) -> list[tuple[str, tuple[int, ...]]]:
    """(node id, shape) of each Input node in node order: the compiled model's arguments."""
    out = []
    for node in graph:
        if node.type == "Input":
            shape = graph.resolved_params(node.id).get("shape", ())
            out.append((node.id, tuple(int(d) for d in shape)))
    return out


def output_nodes(graph: Graph) -> list[str]:
    return [node.id for node in graph if node.type == "Output"]


def random_inputs(
    graph: Graph, batch: int, dtype: torch.dtype, seed: int = 0, device: Any = "cpu",
    requires_grad: bool = True,
) -> tuple[torch.Tensor, ...]:
    """One deterministic standard-normal batch per Input node (node order)."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed + INPUT_SEED_OFFSET)
    out = []
    for _, shape in input_nodes(graph):
        t = torch.randn((batch, *shape), generator=gen, dtype=dtype).to(device)
        out.append(t.requires_grad_(requires_grad))
    return tuple(out)


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _step(model: Any, inputs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor], seed: int,
          logdet_weight: torch.Tensor | None = None,
          ) -> tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor | None], list[torch.Tensor | None]]:
    """One training step; the outputs it returns end with the log-determinant when the model has one."""
    import torch

    model.zero_grad(set_to_none=True)
    for t in inputs:
        t.grad = None
    devices = [t.device.index or 0 for t in inputs if t.device.type == "cuda"]
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        outputs = _as_tuple(model(*inputs))
        # A random projection: every output element gets its own gradient weight,
        # so a mix-up of positions cannot cancel out.
        loss = sum((o * w).sum() for o, w in zip(outputs, weights))
        logdet = getattr(model, "logdet", None)
        if logdet is not None and logdet_weight is not None:  # a flow: its likelihood term too
            loss = loss + (logdet * logdet_weight).sum()
            outputs = (*outputs, logdet)
        loss.backward()  # type: ignore[union-attr]
    grads = {name: (p.grad.detach().clone() if p.grad is not None else None)
             for name, p in model.named_parameters()}
    in_grads = [t.grad.detach().clone() if t.grad is not None else None for t in inputs]
    return tuple(o.detach().clone() for o in outputs), grads, in_grads


def _compare(name: str, ref: torch.Tensor | None, other: torch.Tensor | None, scale: float) -> TensorError:
    import torch

    if ref is None and other is None:
        return TensorError(name, 0.0, 0.0, 0.0)
    if ref is None:
        ref = torch.zeros_like(other)  # type: ignore[arg-type]
    if other is None:
        other = torch.zeros_like(ref)
    diff = float((other.double() - ref.double()).abs().max()) if ref.numel() else 0.0
    if not math.isfinite(diff):
        diff = math.inf
    norm = float(ref.double().norm())
    return TensorError(name, diff, diff / scale if scale > 0 else diff, norm)


def _buffers(model: Any) -> dict[str, torch.Tensor]:
    return {name: b.detach().clone() for name, b in model.named_buffers()}


def compare_modes(
    graph: Graph,
    batch: int = 2,
    dtype: str = "float64",
    seed: int = 0,
    mode: str = "reversible",
    device: Any = "cpu",
    tolerance: float | None = None,
    state: Mapping[str, Any] | None = None,
    inputs: Sequence[torch.Tensor] | None = None,
) -> GradReport:
    """Compare ``mode`` ("reversible" or "checkpoint") against "standard" for ``graph`` (an
    ``rs.Graph``); returns a :class:`GradReport` (``ok``, ``failures()``, ``max_error``,
    ``inversion``). Both run one step on the same fresh weights (drawn from ``seed``, which keeps
    the caller's random state as it was) and batch, in ``dtype`` ("float64" or "float32") on
    ``device``; ``tolerance`` is the largest relative error that passes (None: 1e-10 in float64,
    1e-4 in float32).

    ``state`` (a state dict, e.g. a training checkpoint's ``"model"``) checks
    the trained network instead of freshly initialised weights. ``inputs`` (one
    tensor per Input node, e.g. a batch of the project's data) replace the
    standard-normal batch; ``batch`` is then their first dimension.

    Raises the compiler's ``CompileError`` (with a message naming the node)
    when the graph does not compile, and :class:`StateMismatch` (naming the
    keys) when ``state`` belongs to another graph.
    """
    import torch

    from revstudio.compiler import compile as compile_graph

    tdtype = torch_dtype(dtype)
    with torch.random.fork_rng():  # fresh weights from ``seed``: a failure can be run again
        torch.manual_seed(seed)
        model = compile_graph(graph, mode="standard", device=device, dtype=tdtype)
    model.train()
    if inputs is None:
        inputs = random_inputs(graph, batch, tdtype, seed, device)
    else:
        inputs = tuple(t.detach().to(device=device, dtype=tdtype).requires_grad_(True) for t in inputs)
        batch = len(inputs[0])
    if hasattr(model, "initialize"):
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            model.initialize(*[t.detach() for t in inputs])  # once-only data-dependent init
    if state is not None:  # trained weights, in the dtype of the comparison
        why = state_mismatch(model.state_dict(), state)
        if why:
            raise StateMismatch(f"the weights do not fit this graph ({why}); were they saved from another "
                                "project or an older version of it?")
        model.load_state_dict({k: v.to(tdtype) if v.is_floating_point() else v for k, v in state.items()})
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}

    weights = _loss_weights(graph, batch, tdtype, seed, device)
    gen = torch.Generator(device="cpu").manual_seed(seed + 3 * INPUT_SEED_OFFSET)
    logdet_weight = torch.randn(batch, generator=gen, dtype=tdtype).to(device)

    ref_out, ref_grads, ref_in = _step(model, inputs, weights, seed, logdet_weight)
    ref_buffers = _buffers(model)
    model.load_state_dict(state)
    model.mode = mode
    try:
        out, grads, in_grads = _step(model, inputs, weights, seed, logdet_weight)
    except RuntimeError as exc:  # torch's linalg.inv on weights gone singular, deep in backward
        if not is_singular_error(exc):
            raise
        why = f"in {mode} mode's backward" + (" at these weights" if state is not None else "")
        raise SingularLayer(singular_message(model, why, f"{mode.capitalize()} and standard gradients cannot be "
                                             "compared; gradcheck --dtype float64 compares them where the "
                                             "matrix is still invertible")[2]) from None
    buffers = _buffers(model)
    inversion = {}
    if hasattr(model, "inversion_errors"):
        inversion = {str(k): float(v) for k, v in dict(model.inversion_errors()).items()}
    model.mode = "standard"
    if any(not e <= report_tolerance(dtype, tolerance) for e in inversion.values()):
        model.load_state_dict(state)
        inversion_by_node, node_types = node_inversion_errors(model, inputs)
        model.load_state_dict(state)
    else:
        inversion_by_node, node_types = {}, {}

    squares = [float(g.double().pow(2).sum()) for g in [*ref_grads.values(), *ref_in] if g is not None]
    gnorm = math.sqrt(sum(squares))
    scale = gnorm if gnorm > 0 else 1.0
    report = GradReport(dtype=dtype, batch=batch, seed=seed,
                        tolerance=report_tolerance(dtype, tolerance),
                        mode=mode, gradient_norm=gnorm, inversion=inversion, node_inversion=inversion_by_node,
                        node_types=node_types)
    report.unmatched = sorted(set(ref_grads) ^ set(grads))
    for name in sorted(set(ref_grads) & set(grads)):
        report.parameters.append(_compare(name, ref_grads[name], grads[name], scale))
    names = [nid for nid, _ in input_nodes(graph)]
    for name, ref, other in zip(names, ref_in, in_grads):
        report.inputs.append(_compare(name, ref, other, scale))
    names = output_nodes(graph) + ["log-determinant"]  # the last only for flows
    for name, ref, other in zip(names, ref_out, out):
        # outputs are compared relative to their own scale: they are values, not gradients
        report.outputs.append(_compare(f"output {name}", ref, other, _scale(ref)))
    for name in sorted(set(ref_buffers) & set(buffers)):
        if ref_buffers[name].is_floating_point():
            report.buffers.append(_compare(f"buffer {name}", ref_buffers[name], buffers[name],
                                           _scale(ref_buffers[name])))
    return report


def report_tolerance(dtype: str, tolerance: float | None) -> float:
    return TOLERANCE[dtype] if tolerance is None else tolerance


def node_inversion_errors(model: Any, inputs: Sequence[torch.Tensor]
                          ) -> tuple[dict[str, float], dict[str, str]]:
    """For each node of a reversible region whose layer has an inverse (a flow layer, a coupling
    node, a plugin's invertible type): max |x - inverse(forward(x))| over the values it sees in
    one forward pass, relative to x (at least 1). A region's inversion error says that its
    steps do not undo each other; this says which one. Nodes inside group bodies are named by
    their module path. Also each such node's type."""
    import torch

    from revstudio.compiler.held import is_held
    from revstudio.compiler.plan import NodeOp, RegionOp

    from .coupling_inverse import watch_couplings

    seen: dict[str, tuple[Any, tuple[Any, ...], tuple[Any, ...]]] = {}
    types: dict[str, str] = {}
    hooks = []
    for path, executor in model.named_modules():
        plan = getattr(executor, "_plan", None)
        if plan is None:
            continue
        for op in plan.ops:
            if not isinstance(op, RegionOp):
                continue
            for step in op.steps:
                if not isinstance(step, NodeOp):  # a wired coupling: its Merge and bodies invert as one
                    continue
                layer = getattr(executor, step.module, None)
                if layer is None or not callable(getattr(layer, "inverse", None)):
                    continue
                name = f"{path}/{step.node}" if path else step.node
                types[name] = step.type

                def keep(module: Any, args: Any, output: Any, name: str = name) -> None:
                    seen.setdefault(name, (module, tuple(args), _as_tuple(output)))

                if not is_held(layer):  # (a Repeat, Group or coupling node the region takes apart: no hook fires)
                    hooks.append(layer.register_forward_hook(keep))
    try:
        with torch.no_grad():
            with watch_couplings(model, seen, types):  # (a region runs a coupling as its parts)
                model(*inputs)
            out: dict[str, float] = {}
            for name, (module, xs, ys) in seen.items():
                try:
                    if not ys:  # a coupling seen at its region's step: its own forward, then its inverse
                        kept = getattr(module, "logdet", None)
                        ys = _as_tuple(module(*xs))
                        module.logdet = kept
                    back = _as_tuple(module.inverse(*ys))
                except Exception:  # noqa: BLE001 - a plugin's inverse that fails is one that does not undo
                    out[name] = math.inf
                    continue
                errors = [float((x - b).abs().max()) / _scale(x) if x.shape == b.shape else math.inf
                          for x, b in zip(xs, back) if isinstance(x, torch.Tensor) and isinstance(b, torch.Tensor)]
                worst = max(errors, default=math.inf) if len(back) == len(xs) else math.inf
                out[name] = math.inf if math.isnan(worst) else worst  # (NaN: an inverse of 0 * inf)
    finally:
        for hook in hooks:
            hook.remove()
    return out, types




def _loss_weights(graph: Graph, batch: int, dtype: torch.dtype, seed: int, device: Any) -> list[torch.Tensor]:
    # Output shapes come from the check (no probe forward: it would move batch
    # statistics and consume random numbers before the compared steps).
    import torch

    from revstudio.core.check import check

    report = check(graph)
    if not output_nodes(graph):
        raise ValueError("the graph has no Output node, so there is no gradient to compare; add one")
    gen = torch.Generator(device="cpu").manual_seed(seed + 2 * INPUT_SEED_OFFSET)
    out = []
    for nid in output_nodes(graph):
        shape = report.nodes[nid].inputs.get("in") if nid in report.nodes else None
        if shape is None:
            raise ValueError(f"output {nid!r} has no known shape; run 'revstudio check' to see why")
        out.append(torch.randn((batch, *shape), generator=gen, dtype=dtype).to(device))
    return out


def _scale(t: torch.Tensor) -> float:
    return max(1.0, float(t.double().abs().max())) if t.numel() else 1.0
