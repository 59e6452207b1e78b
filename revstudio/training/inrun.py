"""Checks made during a run, on the run's own batch and weights, without disturbing it.

* :func:`region_gradcheck`: the gradients of the reversible mode (activations
  rebuilt in backward) against standard autograd, per reversible region (the
  parameters of the region's nodes, as max |difference| over the global
  gradient norm, the normalisation of ``revstudio gradcheck``), and each
  region's inversion error. Both passes start from the same random state and
  the run's random stream, gradients and batch statistics are restored after,
  so a run with the check computes exactly what a run without it does.
* :func:`tracking`: the steps inside it measure the regions' inversion error
  (``track_inversion``), which a run leaves off on its other steps.
* :class:`PeakMeter`: the measured peak of one training step's forward and
  backward: CUDA allocator statistics, or :class:`LiveTensorTracker` on CPU.
* :func:`first_nonfinite`: which node's output first went NaN/Inf, found by
  forward hooks on the compiled module's named children (node ids).
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import torch

WARN_LEVEL = 1e-4  # a gradient check's error above which the run's output says it is off


@contextlib.contextmanager
def _preserved(model: torch.nn.Module, device: torch.device) -> Iterator[None]:
    grads = {n: (p.grad.clone() if p.grad is not None else None) for n, p in model.named_parameters()}
    buffers = {n: b.clone() for n, b in model.named_buffers()}
    mode = getattr(model, "mode", None)
    devices = [device] if device.type == "cuda" else []
    try:
        with torch.random.fork_rng(devices=devices):
            yield
    finally:
        if mode is not None:
            model.mode = mode  # type: ignore[assignment]
        with torch.no_grad():
            for n, b in model.named_buffers():
                b.copy_(buffers[n])
        for n, p in model.named_parameters():
            p.grad = grads[n]


@contextlib.contextmanager
def tracking(model: torch.nn.Module) -> Iterator[None]:
    """The steps run inside measure the regions' inversion error (``track_inversion``), as
    a model's every step does by default; a run turns it off for its other steps, where
    nobody reads it, and the estimate's peak is a measured step's."""
    before = getattr(model, "track_inversion", None)
    if before is None:
        yield
        return
    model.track_inversion = True  # type: ignore[assignment]
    try:
        yield
    finally:
        model.track_inversion = before  # type: ignore[assignment]


def _grads(model: torch.nn.Module, mode: str, step: Callable[[], torch.Tensor], seed: int) -> dict[str, Any]:
    model.mode = mode  # type: ignore[assignment]
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    step().backward()
    return {n: (p.grad.detach().double().clone() if p.grad is not None else None)
            for n, p in model.named_parameters()}


def region_gradcheck(model: torch.nn.Module, regions: Sequence[Any], step: Callable[[], torch.Tensor],
                     device: torch.device, seed: int, inputs: Sequence[torch.Tensor] = ()) -> dict[str, Any]:
    """Per-region agreement of reversible and standard gradients on the batch ``step`` computes.

    ``step()`` runs forward on the current batch (``inputs``) and returns the loss. Returns
    the ``regions`` list and maxima of a gradcheck row (CONTRACTS section 3). A region whose
    inversion error is over :data:`WARN_LEVEL` also gets ``inverse_off``: its layers whose own
    inverse does not undo their forward on ``inputs`` (a plugin's wrong inverse), worst first.
    """
    with _preserved(model, device), tracking(model):
        ref = _grads(model, "standard", step, seed)
        rev = _grads(model, "reversible", step, seed)
        errors: Any = getattr(model, "inversion_errors", None)
        inversion = dict(errors()) if callable(errors) else {}
        off = [r.id for r in regions  # (NaN and Inf too; None: not measured)
               if inversion.get(r.id) is not None and not inversion[r.id] <= WARN_LEVEL]
        layers = _layers_off(model, inputs) if off and inputs else []
    squares = [float(g.pow(2).sum()) for g in ref.values() if g is not None]
    scale = math.sqrt(sum(squares)) or 1.0
    rows = []
    for region in regions:
        nodes = set(region.nodes)
        worst = 0.0
        for name, g in ref.items():
            if name.split(".", 1)[0] not in nodes:
                continue
            other = rev.get(name)
            if g is None and other is None:
                continue
            a: torch.Tensor = g if g is not None else torch.zeros_like(other)  # type: ignore[arg-type]
            b: torch.Tensor = other if other is not None else torch.zeros_like(a)
            diff = float((a - b).abs().max()) if a.numel() else 0.0
            worst = max(worst, diff / scale if math.isfinite(diff) else math.inf)
        inv = inversion.get(region.id)
        row = {"region": region.id, "grad_rel_error": worst, "inversion_error": float(inv) if inv is not None else None}
        # the row writes NaN and Inf as null, which also means "not measured": say which were neither
        bad = [k for k in ("grad_rel_error", "inversion_error") if row[k] is not None and not math.isfinite(row[k])]
        if bad:
            row["nonfinite"] = bad
        if region.id in off:
            mine = [dict(layer) for layer in layers if layer["node"].split("/")[0].split(".")[0] in nodes]
            if mine:
                row["inverse_off"] = mine
        rows.append(row)
    return {"regions": rows,
            "max_grad_rel_error": _worst(r["grad_rel_error"] for r in rows),
            "max_inversion_error": _worst(r["inversion_error"] for r in rows)}


def _layers_off(model: Any, inputs: Sequence[torch.Tensor]) -> list[dict[str, Any]]:
    """The regions' layers whose inverse misses its input by more than :data:`WARN_LEVEL` on
    ``inputs`` (one standard forward, no gradients), worst first: ``{"node", "type", "error"}``,
    a node inside a group body named by its module path (``blocks.body0/t``)."""
    from revstudio.diagnostics.gradcheck import node_inversion_errors

    model.mode = "standard"  # type: ignore[assignment]
    try:
        errors, types = node_inversion_errors(model, list(inputs))
    except Exception:  # noqa: BLE001 - naming the layer is best effort; the region's figure stands
        return []
    found = [(name, e) for name, e in errors.items() if not e <= WARN_LEVEL]
    found.sort(key=lambda item: -item[1] if not math.isnan(item[1]) else -math.inf)
    return [{"node": name, "type": types.get(name, ""), "error": e} for name, e in found]


def _worst(values: Iterable[float | None]) -> float | None:
    """The largest of the measured values, a NaN counted as Inf (max() keeps or drops a NaN by its
    place in the list); None where none was measured (never 0.0: a region whose input the caller
    dropped before backward went unmeasured, it did not invert exactly)."""
    found = [v if not math.isnan(v) else math.inf for v in values if v is not None]
    return max(found) if found else None


class PeakMeter:
    """Measures the peak bytes of the forward and backward inside ``with meter.measure():``."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.peak: int | None = None

    @contextlib.contextmanager
    def measure(self) -> Iterator[None]:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            base = torch.cuda.memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            yield
            torch.cuda.synchronize(self.device)
            self.peak = int(torch.cuda.max_memory_allocated(self.device) - base)
            return
        from revstudio.diagnostics.memory import LiveTensorTracker

        # exact_resizes: the reversible runtime frees a region's inputs by shrinking storages
        tracker = LiveTensorTracker(exact_resizes=True)
        with tracker:
            yield
            self.peak = int(tracker.peak_bytes)


def first_nonfinite(model: torch.nn.Module, run: Callable[[], Any]) -> tuple[str, str] | None:
    """(the top-level node id, the node itself: ``<module path>/<id>`` inside a group) of the first
    node whose output has a NaN or Inf when ``run()`` runs forward; None where none has."""
    found: list[tuple[str, str]] = []
    handles = []

    def hook(name: tuple[str, str]) -> Callable[..., None]:
        def check(_module: Any, _inputs: Any, output: Any) -> None:
            if found:
                return
            values = output if isinstance(output, (tuple, list)) else (output,)
            for v in values:
                if isinstance(v, torch.Tensor) and v.is_floating_point() and not bool(torch.isfinite(v).all()):
                    found.append(name)
                    return
        return check

    from revstudio.diagnostics.node_layers import node_layers

    # every node's layer, those a reversible region runs and those inside groups too (hooks fire
    # in the order the layers run, so the first found is the first to go non-finite); a module
    # that is no compiled model (no plan) by its children
    layers = [((top, name), layer) for name, _, layer, top in node_layers(model)] or \
        [((name, name), child) for name, child in model.named_children()]
    from revstudio.compiler.held import is_held

    for name, child in layers:
        if not is_held(child):  # (a module a region takes apart never runs its forward: no hook fires on it)
            handles.append(child.register_forward_hook(hook(name)))
    # in standard mode every node's layer runs whole (a reversible region runs an AffineCoupling
    # as its parts: the coupling whose scale overflowed would go unnamed, its next layer blamed)
    mode = getattr(model, "mode", None)
    try:
        if mode is not None:
            setattr(model, "mode", "standard")  # noqa: B010 - a compiled model's mode switch
        with torch.no_grad():
            run()
    except Exception:  # the search is best effort: a forward that fails tells us nothing more
        pass
    finally:
        for h in handles:
            h.remove()
        if mode is not None:
            setattr(model, "mode", mode)  # noqa: B010
    return found[0] if found else None
