"""Measured memory of one training step: peak bytes and bytes kept after forward.

On CUDA the caching allocator's statistics are exact. On CPU there is no
allocator to ask, so :class:`LiveTensorTracker` accounts every tensor storage
created while it is active (a ``TorchDispatchMode`` sees every op's outputs,
including tensors autograd keeps on its graph or on a Function's ``ctx``) and
learns of each release from a finalizer on the storage. Never process RSS.
With ``explain`` it also remembers which tensors made up the peak.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
import weakref
from collections.abc import Callable, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

if TYPE_CHECKING:  # pragma: no cover
    import torch


class LiveTensor(TypedDict):
    """One storage alive at the peak: what a user needs to find where memory goes."""

    bytes: int
    dtype: str
    shape: list[int]
    op: str        # the op that allocated it, e.g. "aten.convolution"
    grad_fn: str   # the autograd node running when it was allocated ("" outside backward ops)
    where: str     # the innermost Python frame outside torch, "revstudio/x.py:12 fn"
    module: str    # the innermost named module running (a node id in a compiled graph), or ""


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


# Frames that may run a named layer or a reversible region, and what names them: a
# module of the measured model (a node id in a compiled graph) or a region (its id).
_RUNNERS = frozenset({"forward", "backward", "run", "__call__", "_checkpointed"})


def _owner_name(local: dict[str, Any], modules: dict[int, str]) -> str:
    owner = local.get("self")
    if owner is not None and id(owner) in modules:
        return modules[id(owner)]
    region = local.get("region", owner)
    rid = getattr(region, "id", None)
    if isinstance(rid, str) and hasattr(region, "steps"):
        return rid if rid.startswith("region") else f"region {rid}"
    return ""


def _tracker_class() -> type:
    # Built lazily: this module is imported by torch-free code paths (the CLI
    # parser), and TorchDispatchMode needs torch at class-creation time.
    global _TRACKER
    if _TRACKER is not None:
        return _TRACKER
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    torch_dir = os.path.dirname(torch.__file__) + os.sep
    stdlib_dir = os.path.dirname(os.__file__) + os.sep
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
    # the measuring harness (this module, the CLI commands) is never where memory goes
    harness = (os.path.abspath(__file__), os.path.join(package_root, "revstudio", "clicmd") + os.sep,
               os.path.join(package_root, "revstudio", "cli.py"), os.path.join(package_root, "revstudio", "__main__.py"))

    def where(modules: dict[int, str]) -> tuple[str, str]:
        """The innermost caller outside torch, the standard library and the harness, and
        the innermost named module (or reversible region) that is running."""
        frame: FrameType | None = sys._getframe(3)
        place, module = "", ""
        while frame is not None and not (place and module):
            code = frame.f_code
            name = code.co_filename
            if not module and code.co_name in _RUNNERS:
                module = _owner_name(frame.f_locals, modules)
            library = name.startswith(torch_dir) or (name.startswith(stdlib_dir) and "-packages" not in name)
            if not place and not library and not name.startswith(harness) and not name.startswith("<"):
                shown = name[len(package_root):] if name.startswith(package_root) else os.path.basename(name)
                place = f"{shown}:{frame.f_lineno} {code.co_name}"
            frame = frame.f_back
        return place, module

    class _Tracker(TorchDispatchMode):
        """Counts the bytes of storages allocated while active, each once."""

        def __init__(self) -> None:
            super().__init__()
            # id(storage) -> (weak ref, bytes when first seen, description or None).
            # Weak, so the tracker never extends a tensor's life.
            self._live: dict[int, tuple[weakref.ref, int, Any]] = {}
            # Storages that existed before (weights, inputs): never counted.
            self._external: dict[int, weakref.ref] = {}
            self.current_bytes = 0
            self.peak_bytes = 0
            self.allocations = 0
            self.phase = ""  # set by the caller ("forward", "backward"); recorded with the peak
            self._finalizers: list[weakref.finalize] = []
            self._explain = False
            self._peak_pending = False  # a new peak whose tensors are not yet listed
            self._peak_live: list[tuple[int, Any]] = []
            self._peak_phase = ""
            # id(module) -> its name in the measured model: says which layer allocated what
            self.module_names: dict[int, str] = {}

        # -- accounting -----------------------------------------------------
        def _storage(self, t: Any) -> Any:
            if not isinstance(t, torch.Tensor) or t.device.type == "meta" or t.is_sparse:
                return None
            try:
                return t.untyped_storage()
            except (RuntimeError, NotImplementedError):  # tensor subclasses without storage
                return None

        def _forget(self, key: int, table: dict) -> None:
            if table is self._live and self._peak_pending:
                # the first release after a new peak: the live set is still the peak's
                self._snapshot()
            entry = table.pop(key, None)
            if entry is not None and table is self._live:
                self.current_bytes -= entry[1]

        def _note_external(self, storage: Any) -> None:
            key = id(storage)
            if key in self._live or key in self._external:
                return
            self._external[key] = weakref.ref(storage)
            self._finalizers.append(weakref.finalize(storage, self._forget, key, self._external))

        def _note_output(self, storage: Any, func: Any, leaf: Any) -> bool:
            key = id(storage)
            if key in self._live or key in self._external:
                return False  # a view or an in-place result: no new memory
            nbytes = int(storage.nbytes())
            info = self._describe(func, leaf) if self._explain else None
            self._live[key] = (weakref.ref(storage), nbytes, info)
            self._finalizers.append(weakref.finalize(storage, self._forget, key, self._live))
            self.current_bytes += nbytes
            self.allocations += 1
            return True

        def _describe(self, func: Any, leaf: Any) -> tuple[str, tuple[int, ...], str, str, str, str]:
            node = torch._C._current_autograd_node()
            place, module = where(self.module_names)
            return (str(leaf.dtype).replace("torch.", ""), tuple(leaf.shape), str(func.overloadpacket),
                    node.name() if node is not None else "", place, module)

        def _entry_bytes(self, entry: tuple[weakref.ref, int, Any]) -> int:
            if not self._shrinkable:
                return entry[1]
            storage = entry[0]()
            return int(storage.nbytes()) if storage is not None else 0

        def recount(self) -> int:
            """Exact live bytes now, re-reading sizes (a library may shrink a
            storage with ``resize_(0)`` to free it while the tensor lives on)."""
            return sum(self._entry_bytes(e) for e in list(self._live.values()))

        def _snapshot(self) -> None:
            self._peak_pending = False
            self._peak_phase = self.phase
            self._peak_live = [(self._entry_bytes(e), e[2]) for e in list(self._live.values())]

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
                    grew = self._note_output(storage, func, leaf) or grew
            if grew:
                if self._shrinkable:
                    self.current_bytes = self.recount()
                if self.current_bytes > self.peak_bytes:
                    self.peak_bytes = self.current_bytes
                    if self._explain:
                        # a storage shrunk in place frees no finalizer: list the peak now;
                        # otherwise wait for the first release (far cheaper while memory grows)
                        if self._shrinkable:
                            self._snapshot()
                        else:
                            self._peak_pending = True
            return out

        _shrinkable = False

        def live_bytes(self) -> int:
            return self.recount() if self._shrinkable else self.current_bytes

        def reset_peak(self) -> None:
            self.peak_bytes = self.live_bytes()
            if self._explain:
                self._snapshot()

        def peak_tensors(self) -> list[LiveTensor]:
            """The storages alive at the peak, largest first (needs ``explain``)."""
            if not self._explain:
                raise RuntimeError("create the tracker with explain=True to list the tensors at the peak")
            if self._peak_pending:
                self._snapshot()
            out = [LiveTensor(bytes=n, dtype=info[0], shape=list(info[1]), op=info[2], grad_fn=info[3],
                              where=info[4], module=info[5]) for n, info in self._peak_live if n > 0]
            out.sort(key=lambda t: -t["bytes"])
            return out

        @property
        def peak_phase(self) -> str:
            """What the caller was doing (``phase``) when the peak was reached."""
            if self._peak_pending:
                return self.phase
            return self._peak_phase

        def __exit__(self, *exc: Any) -> Any:
            if self._peak_pending:
                self._snapshot()
            # Finalizers on long-lived storages (weights) would otherwise pile up
            # in the global registry across measurements.
            for fin in self._finalizers:
                fin.detach()
            self._finalizers.clear()
            return super().__exit__(*exc)

    _TRACKER = _Tracker
    return _Tracker


_TRACKER: type | None = None


def LiveTensorTracker(exact_resizes: bool = False, explain: bool = False) -> Any:
    """A context manager counting live bytes of tensors created inside it (CPU or any device).

    ``tracker.current_bytes`` / ``tracker.live_bytes()`` are the bytes alive
    now, ``tracker.peak_bytes`` the most alive at once (after any op).
    Storages that existed before entering (weights, inputs, a view of them)
    are never counted. With ``exact_resizes`` the live total is re-read after
    each allocation, so storages shrunk in place by ``resize_(0)`` (how some
    reversible libraries free activations) stop counting; slower, so only
    the benchmark's third-party columns use it. With ``explain`` every
    allocation records its op, dtype, shape and caller, and
    ``tracker.peak_tensors()`` lists what was alive at the peak (their bytes
    add up to ``peak_bytes``); ``tracker.phase = "backward"`` labels the peak.
    """
    tracker = _tracker_class()()
    tracker._shrinkable = exact_resizes
    tracker._explain = explain
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


LOW_PRECISIONS = ("bf16", "fp16")


class Autocast:
    """``model`` stepped as ``revstudio train --precision`` steps it: its forward under autocast
    (``precision`` "bf16" or "fp16" on ``device_type``), the backward outside it. Everything
    else (``mode``, ``parameters()``, ``memory_budget``) is the model's own, so the measuring
    functions here take it in the model's place."""

    def __init__(self, model: Any, device_type: str, precision: str) -> None:
        import torch

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
    """Run one forward+backward step and measure it.

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
    """:func:`measure_step` for each mode of one model (switched through ``model.mode``).

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
