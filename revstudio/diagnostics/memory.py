"""Measured memory of one training step: peak bytes and bytes kept after forward.

On CUDA the caching allocator's statistics are exact. On CPU there is no
allocator to ask, so :class:`~.memory_tracker.LiveTensorTracker` accounts every
tensor storage created while it is active (``memory_tracker``). Never process RSS.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from .memory_tracker import LiveTensor, LiveTensorTracker

if TYPE_CHECKING:  # pragma: no cover
    import torch


class StepMemory(TypedDict):
    """One measured training step; bytes are relative to before the step."""

    peak_bytes: int
    kept_bytes: int
    seconds: float
    # compare_modes: every timed run (interleaved across modes), for the spread
    seconds_runs: NotRequired[list[float]]
    # only when asked for (top > 0): the largest tensors alive at the peak
    peak_phase: NotRequired[str]
    peak_tensors: NotRequired[list[LiveTensor]]
    peak_by_dtype: NotRequired[dict[str, int]]


# Timing reads this clock (a module attribute, so tests can drive it deterministically).
_clock: Callable[[], float] = time.perf_counter


def _as_tuple(value: Any) -> tuple[Any, ...]:
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,)


def default_loss(outputs: Any) -> torch.Tensor:
    """Sum of every floating output: cheap, and every output gets a gradient."""
    total = None
    for out in _as_tuple(outputs):
        if out.is_floating_point() and out.requires_grad:
            term = out.sum()
            total = term if total is None else total + term
    if total is None:
        raise ValueError("the model produced no output that requires grad; nothing to train")
    return total


def _device_of(inputs: Sequence[Any], model: Any) -> torch.device:
    import torch

    for t in inputs:
        if isinstance(t, torch.Tensor):
            return t.device
    params = getattr(model, "parameters", None)
    if params is not None:
        for p in params():
            return p.device
    return torch.device("cpu")


def _zero_grads(model: Any, inputs: Sequence[Any]) -> None:
    # Gradients from an earlier step would be accumulated into, not allocated:
    # set them to None so each step pays for its own, as a fresh step does.
    if hasattr(model, "zero_grad"):
        model.zero_grad(set_to_none=True)
    for t in inputs:
        if getattr(t, "grad", None) is not None:
            t.grad = None


def _step(model: Callable[..., Any], inputs: Sequence[Any], loss_fn: Callable[[Any], Any]) -> Any:
    outputs = model(*inputs)
    loss = loss_fn(outputs)
    return outputs, loss


def _measure_cpu(model: Callable[..., Any], inputs: Sequence[Any], loss_fn: Callable[[Any], Any],
                 exact_resizes: bool, top: int) -> tuple[int, int, Any]:
    tracker = LiveTensorTracker(exact_resizes, explain=top > 0)
    if top > 0 and hasattr(model, "named_modules"):
        tracker.module_names = {id(m): name for name, m in model.named_modules() if name}
    with tracker:
        tracker.phase = "forward"
        outputs, loss = _step(model, inputs, loss_fn)
        kept = tracker.live_bytes()
        tracker.phase = "backward"
        loss.backward()
        del outputs, loss
        peak = tracker.peak_bytes
    return int(peak), int(kept), tracker if top > 0 else None


def _measure_cuda(
    model: Callable[..., Any], inputs: Sequence[Any], loss_fn: Callable[[Any], Any], device: torch.device
) -> tuple[int, int]:
    import torch

    torch.cuda.synchronize(device)
    base = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    outputs, loss = _step(model, inputs, loss_fn)
    torch.cuda.synchronize(device)
    kept = torch.cuda.memory_allocated(device) - base
    loss.backward()
    del outputs, loss
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - base
    return int(peak), int(kept)


def time_step(
    model: Callable[..., Any],
    inputs: Sequence[Any],
    loss_fn: Callable[[Any], Any] | None = None,
    runs: int = 1,
) -> list[float]:
    """Wall-clock seconds of ``runs`` forward+backward steps (untracked)."""
    import torch

    loss_fn = loss_fn or default_loss
    device = _device_of(inputs, model)
    times = []
    for _ in range(max(1, runs)):
        _zero_grads(model, inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = _clock()
        outputs, loss = _step(model, inputs, loss_fn)
        loss.backward()
        del outputs, loss
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(_clock() - start)
    return times


def _explained(result: StepMemory, tracker: Any, top: int) -> StepMemory:
    tensors = tracker.peak_tensors()
    by_dtype: dict[str, int] = {}
    for t in tensors:
        by_dtype[t["dtype"]] = by_dtype.get(t["dtype"], 0) + t["bytes"]
    result["peak_phase"] = tracker.peak_phase
    result["peak_tensors"] = tensors[:top]
    result["peak_by_dtype"] = dict(sorted(by_dtype.items(), key=lambda kv: -kv[1]))
    return result


class Autocast:
    """``model`` stepped as ``revstudio train --precision`` steps it: its forward under autocast
    (``precision`` "bf16" or "fp16" on ``device_type``), the backward outside it. Everything
    else (``mode``, ``parameters()``, ``memory_budget``) is the model's own, so the measuring
    functions here take it in the model's place."""

    def __init__(self, model: Any, device_type: str, precision: str) -> None:
        import torch

        from .estimate import LOW_PRECISIONS

        if precision not in LOW_PRECISIONS:
            raise ValueError(f"precision {precision!r} is not an autocast precision; use bf16 or fp16")
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "_cast", (device_type, torch.bfloat16 if precision == "bf16" else torch.float16))

    def __call__(self, *inputs: Any) -> Any:
        import torch

        with torch.autocast(self._cast[0], dtype=self._cast[1]):
            return self.model(*inputs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.model, name, value)


def measure_step(
    model: Callable[..., Any],
    inputs: Sequence[Any],
    loss_fn: Callable[[Any], Any] | None = None,
    *,
    timing_runs: int = 1,
    exact_resizes: bool = True,
    warmup: bool = True,
    top: int = 0,
) -> StepMemory:
    """Run one forward+backward step of ``model`` (an ``rs.compile`` model, or any module) on
    ``inputs`` (one tensor per Input node) and measure it; returns a :class:`StepMemory` dict.
    ``loss_fn``, called with the outputs, makes the loss (None: the sum of every floating output).

    ``peak_bytes``: most bytes alive at once during the step; ``kept_bytes``:
    bytes alive after forward (activations kept for backward, plus the outputs
    and loss). Both exclude what existed before the step (weights, inputs),
    and parameter gradients are freed first so the step allocates its own.
    ``warmup`` runs one untracked step first, so one-time costs (lazy
    initialisation, allocator growth, kernel selection) are not the step's.
    ``seconds`` is the median of ``timing_runs`` further untracked steps, so
    the tracking overhead never inflates it. ``exact_resizes`` (CPU) re-reads
    storage sizes after each allocation: the reversible runtime, like MemCNN,
    frees a region's inputs by shrinking their storage in place. ``top > 0``
    adds ``peak_tensors`` (the ``top`` largest storages alive at the peak),
    ``peak_by_dtype`` and ``peak_phase`` ("forward" or "backward"); on CUDA
    they come from one extra step under the live-tensor tracker.
    """
    import torch

    loss_fn = loss_fn or default_loss
    inputs = tuple(inputs)
    device = _device_of(inputs, model)
    if warmup:
        time_step(model, inputs, loss_fn, runs=1)
    _zero_grads(model, inputs)
    if device.type == "cuda":
        peak, kept = _measure_cuda(model, inputs, loss_fn, device)
        tracker = None
        if top > 0:
            _zero_grads(model, inputs)
            tracker = _measure_cpu(model, inputs, loss_fn, exact_resizes, top)[2]
    else:
        peak, kept, tracker = _measure_cpu(model, inputs, loss_fn, exact_resizes, top)
    seconds = statistics.median(time_step(model, inputs, loss_fn, timing_runs)) if timing_runs > 0 else 0.0
    _zero_grads(model, inputs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    result = StepMemory(peak_bytes=peak, kept_bytes=kept, seconds=float(seconds))
    return _explained(result, tracker, top) if tracker is not None else result


def compare_modes(
    model: Any,
    inputs: Sequence[Any],
    modes: Sequence[str],
    loss_fn: Callable[[Any], Any] | None = None,
    *,
    repeat: int = 1,
    exact_resizes: bool = True,
    top: int = 0,
) -> dict[str, StepMemory]:
    """:func:`measure_step` for each mode of one model (switched through ``model.mode``, set back
    after); returns ``{mode: StepMemory}`` for ``modes`` (e.g. ``["standard", "reversible"]``).
    ``model``, ``inputs``, ``loss_fn``, ``exact_resizes`` and ``top`` are :func:`measure_step`'s.

    Fair to every mode: each runs one warm-up step before anything is
    measured (the first mode would otherwise pay the process's one-time
    costs); memory comes from one tracked step per mode; the ``repeat`` timed
    steps are untracked and interleaved round-robin, starting each round
    with the next mode, so drifting machine load and cache state hit every
    mode alike; ``seconds`` is their median.
    """
    inputs = tuple(inputs)
    loss_fn = loss_fn or default_loss
    before = model.mode
    try:
        for mode in modes:
            model.mode = mode
            time_step(model, inputs, loss_fn, runs=1)
        out: dict[str, StepMemory] = {}
        for mode in modes:
            model.mode = mode
            out[mode] = measure_step(model, inputs, loss_fn, timing_runs=0, exact_resizes=exact_resizes,
                                     warmup=False, top=top)
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        for r in range(max(1, repeat)):
            k = r % len(modes)
            for mode in [*modes[k:], *modes[:k]]:
                model.mode = mode
                times[mode] += time_step(model, inputs, loss_fn, runs=1)
        for mode in modes:
            out[mode]["seconds"] = float(statistics.median(times[mode]))
            out[mode]["seconds_runs"] = [float(t) for t in times[mode]]
    finally:
        model.mode = before
        _zero_grads(model, inputs)
    return out
