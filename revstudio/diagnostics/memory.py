"""Measured memory of one training step: peak bytes and bytes kept after forward.

On CUDA the caching allocator's statistics are exact. On CPU there is no
allocator to ask, so :class:`LiveTensorTracker` accounts every tensor storage
created while it is active (a ``TorchDispatchMode`` sees every op's outputs,
including tensors autograd keeps on its graph or on a Function's ``ctx``) and
learns of each release from a finalizer on the storage. Never process RSS.
"""
from __future__ import annotations

import statistics
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:  # pragma: no cover
    import torch


class StepMemory(TypedDict):
    """One measured training step; bytes are relative to before the step."""

    peak_bytes: int
    kept_bytes: int
    seconds: float


def _tracker_class() -> type:
    # Built lazily: this module is imported by torch-free code paths (the CLI
    # parser), and TorchDispatchMode needs torch at class-creation time.
    global _TRACKER
    if _TRACKER is not None:
        return _TRACKER
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class _Tracker(TorchDispatchMode):
        """Counts the bytes of storages allocated while active, each once."""

        def __init__(self) -> None:
            super().__init__()
            # id(storage) -> (weak ref, bytes when first seen). Weak, so the
            # tracker never extends a tensor's life.
            self._live: dict[int, tuple[weakref.ref, int]] = {}
            # Storages that existed before (weights, inputs): never counted.
            self._external: dict[int, weakref.ref] = {}
            self.current_bytes = 0
            self.peak_bytes = 0
            self.allocations = 0
            self._finalizers: list[weakref.finalize] = []

        # -- accounting -----------------------------------------------------
        def _storage(self, t: Any) -> Any:
            import torch

            if not isinstance(t, torch.Tensor) or t.device.type == "meta" or t.is_sparse:
                return None
            try:
                return t.untyped_storage()
            except (RuntimeError, NotImplementedError):  # tensor subclasses without storage
                return None

        def _forget(self, key: int, table: dict) -> None:
            entry = table.pop(key, None)
            if entry is not None and table is self._live:
                self.current_bytes -= entry[1]

        def _note_external(self, storage: Any) -> None:
            key = id(storage)
            if key in self._live or key in self._external:
                return
            self._external[key] = weakref.ref(storage)
            self._finalizers.append(weakref.finalize(storage, self._forget, key, self._external))

        def _note_output(self, storage: Any) -> bool:
            key = id(storage)
            if key in self._live or key in self._external:
                return False  # a view or an in-place result: no new memory
            nbytes = int(storage.nbytes())
            self._live[key] = (weakref.ref(storage), nbytes)
            self._finalizers.append(weakref.finalize(storage, self._forget, key, self._live))
            self.current_bytes += nbytes
            self.allocations += 1
            return True

        def recount(self) -> int:
            """Exact live bytes now, re-reading sizes (a library may shrink a
            storage with ``resize_(0)`` to free it while the tensor lives on)."""
            total = 0
            for ref, _ in list(self._live.values()):
                storage = ref()
                if storage is not None:
                    total += int(storage.nbytes())
            return total

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            for leaf in tree_leaves((args, kwargs)):
                storage = self._storage(leaf)
                if storage is not None:
                    self._note_external(storage)
            out = func(*args, **kwargs)
            grew = False
            for leaf in tree_leaves(out):
                storage = self._storage(leaf)
                if storage is not None:
                    grew = self._note_output(storage) or grew
            if grew:
                if self._shrinkable:
                    self.current_bytes = self.recount()
                self.peak_bytes = max(self.peak_bytes, self.current_bytes)
            return out

        _shrinkable = False

        def live_bytes(self) -> int:
            return self.recount() if self._shrinkable else self.current_bytes

        def reset_peak(self) -> None:
            self.peak_bytes = self.live_bytes()

        def __exit__(self, *exc: Any) -> Any:
            # Finalizers on long-lived storages (weights) would otherwise pile up
            # in the global registry across measurements.
            for fin in self._finalizers:
                fin.detach()
            self._finalizers.clear()
            return super().__exit__(*exc)

    _TRACKER = _Tracker
    return _Tracker


_TRACKER: type | None = None


def LiveTensorTracker(exact_resizes: bool = False) -> Any:
    """A context manager counting live bytes of tensors created inside it (CPU or any device).

    ``tracker.current_bytes`` / ``tracker.live_bytes()`` are the bytes alive
    now, ``tracker.peak_bytes`` the most alive at once (after any op).
    Storages that existed before entering (weights, inputs, a view of them)
    are never counted. With ``exact_resizes`` the live total is re-read after
    each allocation, so storages shrunk in place by ``resize_(0)`` (how some
    reversible libraries free activations) stop counting; slower, so only
    the benchmark's third-party columns use it.
    """
    tracker = _tracker_class()()
    tracker._shrinkable = exact_resizes
    return tracker


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


def _measure_cpu(
    model: Callable[..., Any], inputs: Sequence[Any], loss_fn: Callable[[Any], Any], exact_resizes: bool
) -> tuple[int, int]:
    tracker = LiveTensorTracker(exact_resizes)
    with tracker:
        outputs, loss = _step(model, inputs, loss_fn)
        kept = tracker.live_bytes()
        loss.backward()
        del outputs, loss
        peak = tracker.peak_bytes
    return int(peak), int(kept)


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
        start = time.perf_counter()
        outputs, loss = _step(model, inputs, loss_fn)
        loss.backward()
        del outputs, loss
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return times


def measure_step(
    model: Callable[..., Any],
    inputs: Sequence[Any],
    loss_fn: Callable[[Any], Any] | None = None,
    *,
    timing_runs: int = 1,
    exact_resizes: bool = True,
) -> StepMemory:
    """Run one forward+backward step and measure it.

    ``peak_bytes``: most bytes alive at once during the step; ``kept_bytes``:
    bytes alive after forward (activations kept for backward, plus the outputs
    and loss). Both exclude what existed before the step (weights, inputs),
    and parameter gradients are freed first so the step allocates its own.
    ``seconds`` is the median of ``timing_runs`` further untracked steps, so
    the tracking overhead never inflates it. ``exact_resizes`` (CPU) re-reads
    storage sizes after each allocation: the reversible runtime, like MemCNN,
    frees a region's inputs by shrinking their storage in place.
    """
    import torch

    loss_fn = loss_fn or default_loss
    inputs = tuple(inputs)
    device = _device_of(inputs, model)
    _zero_grads(model, inputs)
    if device.type == "cuda":
        peak, kept = _measure_cuda(model, inputs, loss_fn, device)
    else:
        peak, kept = _measure_cpu(model, inputs, loss_fn, exact_resizes)
    seconds = statistics.median(time_step(model, inputs, loss_fn, timing_runs)) if timing_runs > 0 else 0.0
    _zero_grads(model, inputs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return StepMemory(peak_bytes=peak, kept_bytes=kept, seconds=float(seconds))
