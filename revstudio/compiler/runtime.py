"""The reversible runtime: regions of steps over value slots, one autograd Function each.

A region is a list of steps over numbered value slots. Forward keeps only the
region's outputs; backward walks the steps in reverse, rebuilding each step's
inputs from its outputs and, in the same pass, getting gradients: a coupling
``y = a + s * F(b)`` evaluates F(b) once with grad, which gives both
``a = y - s * F(b)`` and the gradients of b and of F's parameters. Parameter
gradients are returned from the Function (``runtime_function``; optimizers, DDP
hooks and clipping see them as usual). The streams between steps may be kept in a wider dtype
(float64) or as compensated float32 pairs (``runtime_streams``) so that
reconstruction error does not compound with depth. Buffers the runtime made
itself (widened inputs, rebuilt streams, gradient sums) are updated in place;
the caller's tensors never are (``Owned``).
Imports only torch and the standard library: the code exporter inlines this
file verbatim.
"""
import contextlib
import sys
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from .runtime_affine import Affine  # noqa: F401 - re-exported: the runtime's public step API
from .runtime_eager import eager
from .runtime_function import _RegionFunction
from .runtime_layout import Cat, Rename, Slice, fuse_cat_slice  # noqa: F401 - re-exported
from .runtime_recompute import (  # noqa: F401 - re-exported
    RngState,
    _owners,
    frozen_batch_stats,
    recompute_contexts,
    restored_batch_stats,
    state_slots,
)
from .runtime_steps import (  # noqa: F401 - re-exported: the runtime's public step API
    LOGDET,
    Coupling,
    Invertible,
    Owned,
    Step,
    _accumulate,
    _params_of,
)
from .runtime_streams import (  # noqa: F401 - re-exported
    FLOAT32X2,
    Pair,
    Value,
    _shares,
    _update,
    dense,
    exact,
    is_pair,
    sample,
    to_stream,
    value,
)

Tensor = torch.Tensor


def share_from_rank0(modules: Sequence[nn.Module]) -> None:
    """Under torch.distributed every rank must start from the same weights: data-dependent
    init ran on each rank's own batch, so take rank 0's result. (Here, torch-only, so the
    exported Model's ``initialize`` runs this very code.)"""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return
    for m in modules:
        for t in list(m.parameters()) + list(m.buffers()):
            dist.broadcast(t.data, src=0)


class _SegmentPart:
    """One checkpoint segment of a region: its steps run on their own slots (an object, so
    copy.deepcopy of a model copies it along)."""

    def __init__(self, region: "Region", start: int, end: int, reads: Sequence[int], outs: Sequence[int],
                 dtype: torch.dtype) -> None:
        self.region, self.start, self.end = region, start, end
        self.reads, self.outs, self.dtype = list(reads), list(outs), dtype

    def __call__(self, *xs: Tensor) -> tuple[Any, ...]:
        env: dict[int, Any] = dict(zip(self.reads, xs))
        region = self.region
        for i in range(self.start, self.end):
            region.steps[i].run(env, self.dtype, None, region.dead_after[i])
            for s in region.dead_after[i]:
                if s not in self.outs:
                    env.pop(s, None)
        return tuple(env.get(s) for s in self.outs)


def _fused_cuts(before: Sequence[Step], after: Sequence[Step], cuts: Sequence[int]) -> list[int]:
    """``cuts`` (indices into ``before``) as indices into ``after`` = fuse_cat_slice(before): a cut
    between a Cat and the Slice fused with it into one Rename moves after the Rename."""
    where: dict[int, int] = {}
    i = j = 0
    while i < len(before) and j < len(after):
        if after[j] is before[i]:
            where[i] = j
            i += 1
        else:  # a Rename made of before[i] (Cat) and before[i + 1] (Slice)
            where[i], where[i + 1] = j, j + 1
            i += 2
        j += 1
    return sorted({where[c] for c in cuts if c in where and 0 < where[c] < len(after)})


def _segments(cuts: Sequence[int], steps: Sequence[Step], outputs: Sequence[int]
              ) -> list[tuple[int, int, list[int], list[int]]]:
    """(start, end, slots read from before, slots made that later steps or the outputs read)
    of each checkpoint segment; LOGDET (a flow's running log-determinant) passes through all."""
    bounds = [0, *cuts, len(steps)]
    out = []
    for k in range(len(bounds) - 1):
        start, end = bounds[k], bounds[k + 1]
        made: set[int] = set()
        seg_in: list[int] = []
        for step in steps[start:end]:
            seg_in += [s for s in step.slots_read() if s not in made and s not in seg_in]
            made |= set(step.produces)
        later = set(outputs)
        for step in steps[end:]:
            later |= set(step.slots_read())
        seg_out = [s for s in sorted(made) if s in later]
        out.append((start, end, [*seg_in, LOGDET], [*seg_out, LOGDET]))
    return out


class Region:
    """A reversible region over slots: ``inputs`` -> steps -> ``outputs`` (kept), ``side`` (kept inputs);
    ``free``: inputs it may release after forward (restored in backward); ``given``: inputs that
    are the model's own arguments (the caller's tensors)."""

    def __getstate__(self) -> dict[str, Any]:
        # a copy (deepcopy, pickle) starts without the last forward's logdet, which belongs to
        # that forward's autograd graph (deepcopy refuses such a tensor), as a new region does
        state = self.__dict__.copy()
        state["logdet"] = None
        return state

    def __init__(self, id: str, steps: Sequence[Step], inputs: Sequence[int], outputs: Sequence[int],
                 side: Sequence[int] = (), free: Sequence[int] = (), given: Sequence[int] = (),
                 cuts: Sequence[int] = ()) -> None:
        self.id = id
        self.steps = fuse_cat_slice(steps, tuple(outputs) + tuple(side))
        self.segments = _segments(_fused_cuts(steps, self.steps, cuts), self.steps, outputs)
        self.inputs, self.outputs = tuple(inputs), tuple(outputs)
        self.side, self.free, self.given = tuple(side), frozenset(free), frozenset(given)
        self.rebuilt = [s for s in self.inputs if s not in self.side]
        self.track_error = True
        self.last_error: Tensor | None = None
        # whose ``last_error`` this region's backward sets: its own, or for a memory budget's
        # reversible rest, the whole region's (what ``inversion_errors()`` reports)
        self.error_owner: Region = self
        self.flow = any(step.flow for step in self.steps)
        # log|det| of the last forward per sample (flow steps only), with its gradient in every mode
        self.logdet: Tensor | None = None
        keep = set(self.outputs) | set(self.side)
        last: dict[int, int] = {}
        for i, step in enumerate(self.steps):
            for s in step.slots_read():
                last[s] = i
        dead: list[list[int]] = [[] for _ in self.steps]
        for s, i in last.items():
            if s not in keep:
                dead[i].append(s)
        self.dead_after: list[frozenset[int]] = [frozenset(d) for d in dead]
        self.modules: list[nn.Module] = [m for step in self.steps for m in step.modules]
        # the memory layout of the streams the runtime copies (reversible mode, in-place
        # inference): None picks it, see layout_of
        self.memory_format: torch.memory_format | None = None
        self.convolves = any(isinstance(m, (nn.Conv2d, nn.ConvTranspose2d))
                             for top in self.modules for m in top.modules())
        # every step only rearranges values (slices, joins, a Reshape, a Permute, a Squeeze):
        # standard mode keeps nothing of it for backward either, so there is nothing to rebuild
        self.rearranges = all(isinstance(step, (Slice, Cat, Rename))
                              or (isinstance(step, Invertible) and not step.cast and not step.flow)
                              for step in self.steps)
        self.param_list: list[nn.Parameter] = []
        self._tree: list[nn.Module] | None = None
        self._slots: list[tuple[dict[str, Any], str]] | None = None
        # of ``free``, the inputs of the running call that someone besides the caller holds
        self.held: frozenset[int] = frozenset()

    def tree(self) -> list[nn.Module]:
        """Every module of the region's steps, once (cached: the structure is fixed)."""
        if self._tree is None:
            self._tree = _owners(self.modules)
        return self._tree

    def state_slots(self) -> list[tuple[dict[str, Any], str]]:
        """Where each weight and buffer of the region's modules lives (cached, as ``tree``)."""
        if self._slots is None:
            self._slots = state_slots(self.tree())
        return self._slots

    def layout_of(self, x: Tensor) -> torch.memory_format:
        """The memory layout of the copy of input ``x`` the region keeps its stream in.

        Automatically channels_last for a 4-D float32 input of a region with 2-D
        convolutions on the CPU: oneDNN computes convolutions in it without reordering
        their input and gradient, so forward and the rebuilding backward run faster.
        The stream is copied in any case, so the layout costs no memory; the region's
        outputs come back in it (layers downstream keep it). Elsewhere the copy keeps
        ``x``'s layout. ``memory_format`` overrides the choice.

        Not automatically where the region has a general invertible layer (a flow's
        permutation, squeeze, 1x1 convolution): its outputs are new tensors the runtime
        does not own, so the couplings after it read channel-slice views of them, which in
        channels_last have the few channels innermost (every convolution reorders them and
        every stream update runs on a short inner axis: a Permute flow ran ~1.4x slower).
        """
        if x.dim() != 4:
            return torch.preserve_format
        if self.memory_format is not None:
            return self.memory_format
        if (self.convolves and x.device.type == "cpu" and x.dtype == torch.float32
                and not any(isinstance(step, Invertible) for step in self.steps)):
            return torch.channels_last
        return torch.preserve_format

    def run(self, inputs: Sequence[Tensor], dtype: torch.dtype, stream: torch.dtype | str | None = None,
            in_place: bool = False) -> tuple[Tensor, ...]:
        """Plain execution (autograd records everything): the "standard" mode and no-grad inference.

        ``in_place`` (only without autograd): update the streams the runtime owns in place.
        """
        env: dict[int, Value] = {s: to_stream(x, stream, copy=in_place and s not in self.side,
                                              layout=self.layout_of(x) if in_place else torch.preserve_format)
                                 for s, x in zip(self.inputs, inputs)}
        own = None
        if in_place:
            own = Owned()
            own.values.update(s for s, x in zip(self.inputs, inputs) if env[s] is not x and s not in self.side)
        for i, step in enumerate(self.steps):
            step.run(env, dtype, own, self.dead_after[i])
            for s in self.dead_after[i]:
                env.pop(s, None)
        out_dtype = inputs[0].dtype
        found = env.get(LOGDET)
        self.logdet = None if found is None else value(found)
        return tuple(value(env[s]).to(out_dtype) for s in self.outputs)

    def __call__(self, inputs: Sequence[Tensor], mode: str, dtype: torch.dtype,
                 stream: torch.dtype | str | None = None) -> tuple[Tensor, ...]:
        """Runs the region; ``stream``: how its residual streams are kept (a dtype, ``FLOAT32X2``
        for compensated float32 pairs, None: as the inputs)."""
        if mode == "standard" or (inputs and inputs[0].device.type == "meta"):
            # (a meta tensor holds no values to free and rebuild: shapes only, as standard mode gives them)
            return self.run(inputs, dtype)
        if mode == "checkpoint":  # (a trace records the forward alone, as assembly.recompute_in_backward says)
            return self.run(inputs, dtype) if torch.jit.is_tracing() else self._checkpointed(inputs, dtype)
        if _transformed():
            raise RuntimeError(
                f"reversible region {self.id!r}: torch.func transforms (grad, vmap, jacrev, ...) are not "
                "supported in reversible mode, because the region frees and rebuilds its tensors' storage "
                'outside autograd; set model.mode = "standard" for them')
        if torch.jit.is_tracing():  # (torch's own words: "unordered_map::at")
            raise RuntimeError(
                f"reversible region {self.id!r}: torch.jit.trace cannot record reversible mode, because the "
                "region frees and rebuilds its tensors' storage outside autograd; set "
                'model.mode = "standard" (or "checkpoint") before tracing; the weights are the same')
        if exporting():  # (torch's own words: "Cannot access data pointer of Tensor (e.g. FakeTensor ...)")
            raise RuntimeError(
                f"reversible region {self.id!r}: torch.export cannot record reversible mode, because the "
                "region frees and rebuilds its tensors' storage outside autograd; set "
                'model.mode = "standard" (or "checkpoint") before exporting; the weights are the same')
        self.param_list = _params_of(self.tree())
        wants_grad = torch.is_grad_enabled() and (
            any(x.requires_grad for x in inputs) or bool(self.param_list))
        if not wants_grad:
            with torch.no_grad():
                return self._inference(inputs, dtype, stream)
        outs = _reversible(self, inputs, dtype, stream or inputs[0].dtype)
        if self.flow:
            self.logdet, outs = outs[-1], outs[:-1]
        return outs

    @eager  # dynamo cannot trace the in-place updates of the streams (`out=` into a view): it broke
    # the graph at each and warned of every Tensor.add_ after; run eagerly, one graph break
    def _inference(self, inputs: Sequence[Tensor], dtype: torch.dtype,
                   stream: torch.dtype | str | None) -> tuple[Tensor, ...]:
        """Reversible mode without autograd: the streams the runtime owns updated in place."""
        return self.run(inputs, dtype, stream, in_place=True)

    @eager  # dynamo cannot trace a checkpoint's context_fn: run eagerly, a graph break
    def _checkpointed(self, inputs: Sequence[Tensor], dtype: torch.dtype) -> tuple[Tensor, ...]:
        """torch.utils.checkpoint segment by segment (``segments``): backward recomputes one
        segment at a time, so it holds the segments' inputs plus one segment's activations."""
        from torch.utils.checkpoint import checkpoint

        env: dict[int, Any] = dict(zip(self.inputs, inputs))
        for start, end, seg_in, seg_out in self.segments:
            steps = self.steps[start:end]
            modules = [m for step in steps for m in step.modules]
            reads = [s for s in seg_in if s in env]

            def context(modules: list[nn.Module] = modules
                        ) -> tuple[contextlib.AbstractContextManager, contextlib.AbstractContextManager]:
                # recomputing leaves BatchNorm statistics as the forward left them, and a
                # second backward or an in-place weight edit is refused (RecomputeGuard)
                return recompute_contexts(modules)

            part = _SegmentPart(self, start, end, reads, seg_out, dtype)
            try:
                outs = checkpoint(part, *[env[s] for s in reads], use_reentrant=False, context_fn=context)
            except RuntimeError as exc:
                refusal = checkpoint_refusal(exc, f"reversible region {self.id!r}")
                if refusal is None:
                    raise
                raise refusal from None
            for s in reads:
                if s not in seg_out and s != LOGDET and not self._read_after(s, end):
                    env.pop(s, None)
            env.update((s, y) for s, y in zip(seg_out, outs) if y is not None)
        out_dtype = inputs[0].dtype
        found = env.get(LOGDET)
        self.logdet = None if found is None else value(found)
        return tuple(value(env[s]).to(out_dtype) for s in self.outputs)

    def _read_after(self, slot: int, end: int) -> bool:
        return slot in self.outputs or any(slot in step.slots_read() for step in self.steps[end:])

    @torch.no_grad()
    def inversion_error(self, inputs: Sequence[Tensor], dtype: torch.dtype,
                        stream: torch.dtype | str | None = None) -> float:
        """|x - f^-1(f(x))| / |x| over the region's rebuilt inputs, measured on demand."""
        env: dict[int, Value] = {s: to_stream(x, stream) for s, x in zip(self.inputs, inputs)}
        ref = {s: env[s] for s in self.rebuilt}
        for step in self.steps:
            step.run(env, dtype)
        env = {s: env[s] for s in set(self.outputs) | set(self.side)}
        for step in reversed(self.steps):
            step.inverse(env, dtype)
        errs = [float((exact(ref[s]) - exact(env[s])).norm() / exact(ref[s]).norm().clamp_min(1e-30)) for s in ref]
        return max(errs) if errs else 0.0


def refuse_replicas(model: nn.Module) -> nn.Module:
    """What ``nn.DataParallel`` gets for a replica of a model with reversible regions: a refusal.
    A replica is a shallow copy of each module, and a region is one attribute holding the
    original's layers, so every replica would run the original's weights inside its regions."""
    raise RuntimeError(
        f"{type(model).__name__}: nn.DataParallel over several devices cannot replicate a model with "
        "reversible regions (each replica would run the original's layers inside them); use "
        "DistributedDataParallel, one process per GPU (torchrun, or revstudio train --nproc), which works "
        "in every mode")


_transforms_active = getattr(torch._C, "_are_functorch_transforms_active", None)


def exporting() -> bool:
    """Whether torch.export is tracing this call (torch before 2.4 has no such probe)."""
    probe = getattr(torch.compiler, "is_exporting", None)
    return probe is not None and bool(probe())


def uninitialized(model: nn.Module) -> list[nn.Module]:
    """The layers of ``model`` that still initialise from data (an ActNorm whose flag is not set)."""
    return [m for m in model.modules() if hasattr(m, "initialize") and isinstance(
        getattr(m, "initialized", None), torch.Tensor) and not bool(m.initialized)]


def refuse_export_initialize(model: nn.Module) -> None:
    """torch.export of a model whose ActNorm layers have not initialised from data: a refusal saying
    what to do (torch's words were a recursion, or a guard on a data-dependent expression)."""
    raise RuntimeError(
        f"{type(model).__name__}: torch.export cannot trace the data-dependent initialisation of its ActNorm "
        "layers (each sets its scale and shift from the first batch); load trained weights "
        "(model.load_state_dict(...)) or call the model once on a batch before exporting")


def _transformed() -> bool:
    """Whether a torch.func transform (grad, vmap, ...) is running this call (not asked while
    torch.compile traces: dynamo reads ``is_compiling`` as True and never calls the probe)."""
    return not torch.compiler.is_compiling() and _transforms_active is not None and bool(_transforms_active())


def checkpoint_refusal(exc: RuntimeError, where: str) -> RuntimeError | None:
    """torch's own error for torch.func.grad, vjp, jacrev or hessian over torch.utils.checkpoint
    ("don't yet support saved tensor hooks"), in words naming ``where``, checkpoint mode and the way
    out; None for any other error (raised as it was)."""
    if not (_transformed() and "saved tensor hooks" in str(exc)):
        return None
    return RuntimeError(
        f"{where}: torch.func.grad, vjp, jacrev and hessian are not supported in checkpoint mode, because "
        "torch.utils.checkpoint recomputes the layers through saved-tensor hooks, which torch.func does not "
        'take; set model.mode = "standard" for them (the weights are the same); vmap, jvp and jacfwd work '
        "in checkpoint mode")


def _references(xs: Sequence[Tensor]) -> list[int]:
    return [sys.getrefcount(x) for x in xs]


# what _references counts of a tensor its caller holds by one name; and how many more
# when C++ holds it as well (a graph that saved it, a view: torch >= 2.10 counts that once)
_ONE_NAME: list[int] = []
_use_count = getattr(torch.Tensor, "_use_count", None)


def _count_one_name() -> None:
    probe = torch.empty(0)
    alone = _references([probe])[0]
    view = probe.view(0)
    both = _references([probe])[0]
    del view
    _ONE_NAME[:] = [alone, both - alone]


def _held_elsewhere(region: Region, inputs: Sequence[Tensor]) -> frozenset[int]:
    """The inputs the region may free that something besides its caller holds: the caller
    holds each by one name (its dict of values, a local) and the list it passes; a forward
    hook that kept a layer's output (feature extraction) or a layer that keeps its last
    output holds one more. Freed, that tensor would have no memory: reading it crashes the
    process. Counted against a probe held the same way, so the figure is this Python's and
    this torch's; a graph that saved the input does not count (backward restores it before
    that graph reads it)."""
    if not _ONE_NAME:
        _count_one_name()
    alone, cpp = _ONE_NAME
    counts = _references(inputs)
    held = set()
    for s, x, n in zip(region.inputs, inputs, counts):
        if s in region.free:
            if cpp and _use_count is not None and _use_count(x) > 1:
                n -= cpp  # (torch's count unknown: kept, to be safe)
            if n > alone:
                held.add(s)
    return frozenset(held)


def _reversible_impl(region: Region, inputs: Sequence[Tensor], dtype: torch.dtype,
                     stream: torch.dtype | str) -> tuple[Tensor, ...]:
    # (here, not traced by torch.compile: the count is of the eager call)
    region.held = _held_elsewhere(region, inputs) if region.free else frozenset()
    return _RegionFunction.apply(region, dtype, stream, len(inputs), *inputs, *region.param_list)


# The Function frees and restores storage and records RNG states: run it eagerly
# even inside torch.compile (a graph break around each region).
_reversible = eager(_reversible_impl)
