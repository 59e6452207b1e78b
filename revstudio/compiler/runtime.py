"""The reversible runtime: one autograd Function per region, with a fused backward.

A region is a list of steps over numbered value slots. Forward keeps only the
region's outputs; backward walks the steps in reverse, rebuilding each step's
inputs from its outputs and, in the same pass, getting gradients: a coupling
``y = a + s * F(b)`` evaluates F(b) once with grad, which gives both
``a = y - s * F(b)`` and the gradients of b and of F's parameters. Parameter
gradients are returned from the Function (optimizers, DDP hooks and clipping see
them as usual). The streams between steps may be kept in a wider dtype
(float64) or as compensated float32 pairs (``runtime_streams``) so that
reconstruction error does not compound with depth. Buffers the runtime made
itself (widened inputs, rebuilt streams, gradient sums) are updated in place;
the caller's tensors never are (``Owned``).
Imports only torch and the standard library: the code exporter inlines this
file verbatim.
"""
import contextlib
import functools
import weakref
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from .runtime_affine import Affine  # noqa: F401 - re-exported: the runtime's public step API
from .runtime_layout import Cat, Rename, Slice, fuse_cat_slice  # noqa: F401 - re-exported
from .runtime_steps import (  # noqa: F401 - re-exported: the runtime's public step API
    LOGDET,
    Coupling,
    Invertible,
    Owned,
    RngState,
    Step,
    _accumulate,
    _owners,
    _params_of,
    frozen_batch_stats,
    recompute_contexts,
    restored_batch_stats,
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


def _releasable(x: Tensor, outputs: Sequence[Tensor]) -> bool:
    """Only a tensor that solely owns its whole storage, shared with no output, may be released."""
    if x._base is not None or x.storage_offset() != 0 or not dense(x) or x.numel() == 0:
        return False
    storage = x.untyped_storage()
    if storage.nbytes() != x.numel() * x.element_size():
        return False
    ptr = storage.data_ptr()
    return all(o.untyped_storage().data_ptr() != ptr for o in outputs)


def _first_order_only(backward: Any) -> Any:
    """Like ``once_differentiable``, but a double backward is refused at once, not answered
    with gradients that silently miss every path through the rebuilt activations."""

    @functools.wraps(backward)
    def wrapper(ctx: Any, *gouts: Tensor | None) -> tuple[Tensor | None, ...]:
        # grad mode is on inside backward exactly when the caller asked for create_graph
        if torch.is_grad_enabled():
            raise RuntimeError(
                f"reversible region {ctx.region.id!r}: higher-order gradients (create_graph=True, "
                "double backward) are not supported in reversible mode, because activations are "
                "rebuilt without a graph; set model.mode = \"standard\" or \"checkpoint\" for them")
        with torch.no_grad():
            return backward(ctx, *gouts)

    return wrapper


class _RegionFunction(torch.autograd.Function):
    """Forward without storing activations; backward rebuilds them step by step (fused)."""

    @staticmethod
    def forward(ctx, region: "Region", dtype: torch.dtype, stream: torch.dtype | str, n_in: int,  # type: ignore[override]
                *args: Tensor) -> tuple[Tensor, ...]:
        inputs = args[:n_in]
        ctx.region, ctx.dtype, ctx.n_in = region, dtype, n_in
        ctx.in_dtypes = [x.dtype for x in inputs]
        device = inputs[0].device
        ctx.autocast = (device.type, torch.is_autocast_enabled(device.type), torch.get_autocast_dtype(device.type))
        own = Owned()
        own.whole = True  # the forward's update temporaries sit below backward's peak
        env: dict[int, Value] = {}
        for s, x in zip(region.inputs, inputs):
            env[s] = to_stream(x, stream, copy=s not in region.side, layout=region.layout_of(x))
            if env[s] is not x and s not in region.side:
                own.values.add(s)  # a converted copy: the runtime's to overwrite
        ctx.side = [env[s] for s in region.side]
        ctx.samples = {}
        if region.track_error:
            for s in region.rebuilt:
                ctx.samples[s] = sample(env[s])
        ctx.rng = {}
        for i, step in enumerate(region.steps):
            if step.stochastic:
                ctx.rng[i] = RngState(device)
            step.run(env, dtype, own, region.dead_after[i])
            for s in region.dead_after[i]:
                env.pop(s, None)
        found = env.pop(LOGDET, None)  # a tensor (the slot never holds a pair)
        logdet = None if found is None else value(found)
        out_dtype = inputs[0].dtype
        outs: list[Tensor] = []
        residuals: list[Tensor | None] = []
        for k, s in enumerate(region.outputs):
            t = env[s]
            if isinstance(t, Pair):
                # hi is the float32 rounding of the stream and lo exactly what it left out:
                # hand out hi, keep lo as the residual (no arithmetic, no copy)
                y = t.hi.to(out_dtype)
                if any(_shares(y, x) for x in inputs):
                    y = y.clone()
                outs.append(y)
                residuals.append(t.lo)
                del t
                continue
            y = t.to(out_dtype)
            if y is t and any(_shares(y, x) for x in inputs):
                y = y.clone()  # never hand out a view of an input from a custom Function
            # Keep the returned tensors plus, for wide streams, the rounding residual in the narrow dtype:
            # y + r restores the wide value to ~2^-48, at half the bytes of a wide copy.
            if y is t or y.dtype == t.dtype:
                residuals.append(None)
            elif s in own.values and s not in region.outputs[k + 1:]:
                residuals.append(value(_update(t, y, -1, True)).to(out_dtype))  # the stream is done: reuse it
            else:
                residuals.append(value(_update(t, y, -1, False)).to(out_dtype))
            del t
            outs.append(y)
        env.clear()
        # The returned tensors are kept as detached aliases, not through save_for_backward:
        # backward can then drop them as soon as it has rebuilt the streams from them
        # (a saved tensor stays alive until the whole backward ends). Detached, they hold
        # no grad_fn (no reference cycle) but share the version counter, so an in-place
        # edit by the caller is still caught (``_kept_outputs``).
        ctx.outs = [y.detach() for y in outs]
        ctx.versions = [y._version for y in outs]
        # weights and kept inputs are read again in backward: an in-place edit in between
        # (optimizer.step() before backward) must raise, as autograd's saved tensors do
        ctx.read_again = [(x, x._version) for x in (*args[n_in:], *(inputs[i] for i, s in enumerate(region.inputs)
                                                                     if s in region.side))]
        ctx.residuals = residuals
        ctx.stream = stream
        ctx.freed = []
        if region.free and not _compiling():
            for i, s in enumerate(region.inputs):
                x = inputs[i]
                if s in region.free and _releasable(x, outs):
                    ctx.freed.append((s, x))
                    x.data.untyped_storage().resize_(0)
        # An input the caller passed to the model (``given``: its batch) is its own reference
        # for the inversion error: no samples of it are kept (they would sit at the peak), only
        # a weak reference, which never keeps it alive (if the caller lets it go or edits it
        # before backward, that input goes unmeasured).
        ctx.refs = {}
        freed = {s for s, _ in ctx.freed}
        for i, s in enumerate(region.inputs):
            if s in ctx.samples and s not in freed and s in region.given:
                del ctx.samples[s]
                ctx.refs[s] = (weakref.ref(inputs[i]), inputs[i]._version)
        if region.flow:  # the log-determinant is one more output, so its gradient reaches backward
            logdet = inputs[0].new_zeros(inputs[0].shape[0], dtype=dtype) if logdet is None else logdet.clone()
            return (*outs, logdet)
        return tuple(outs)

    @staticmethod
    @_first_order_only
    def backward(ctx, *gouts: Tensor | None) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        region: Region = ctx.region
        _check_read_again(ctx, region)
        own = Owned()
        own.unneeded = frozenset(s for i, s in enumerate(region.inputs) if not ctx.needs_input_grad[4 + i]
                                 and region.inputs.count(s) == 1)
        env: dict[int, Value] = {}
        y = r = None
        keeps = _keeps_graph()
        kept = _kept_outputs(ctx, region)
        for s, y, r in zip(region.outputs, kept, ctx.residuals):
            if r is None:
                env[s] = y  # the caller's output: never overwritten
            elif is_pair(ctx.stream):
                # the pair is the output (a copy: the caller's tensor is never overwritten) and
                # the residual, taken over unless another backward will ask for it
                env[s] = Pair(y.to(torch.float32, copy=True), r.clone() if keeps or _overlapping(r) else r)
                own.values.add(s)
            else:
                env[s] = _update(y.to(ctx.stream), r, 1, True)
                own.values.add(s)
        del kept, y, r  # (the loop's names would keep the last output and residual alive)
        if len(set(region.outputs)) != len(region.outputs):
            own.values.clear()  # one tensor under two slots: overwrite neither
        if not keeps:
            ctx.residuals = None  # folded into the wide streams; no second backward will ask
        env.update({s: t for s, t in zip(region.side, ctx.side)})
        grads: dict[int, Tensor] = {}
        for s, g in zip(region.outputs, gouts):
            if g is not None:  # gradients stay in the model's dtype, like plain autograd's
                _accumulate(grads, own.grads, s, g)
        if region.flow and gouts[-1] is not None:
            grads[LOGDET] = gouts[-1]  # read by every flow step
        pgrads: dict[int, Tensor] = {}
        device_type, enabled, ac_dtype = ctx.autocast
        with torch.autocast(device_type, dtype=ac_dtype, enabled=enabled):
            for i in range(len(region.steps) - 1, -1, -1):
                step = region.steps[i]
                norms = step.batch_norms()
                if i in ctx.rng or norms:
                    replay = ctx.rng[i].replay() if i in ctx.rng else contextlib.nullcontext()
                    with frozen_batch_stats(norms), replay:
                        step.backward(env, grads, pgrads, ctx.dtype, own)
                else:
                    step.backward(env, grads, pgrads, ctx.dtype, own)
        if ctx.samples or ctx.refs:
            errs = []
            for s, ref in ctx.samples.items():
                rec = sample(env[s])
                errs.append((ref - rec).norm() / ref.norm().clamp_min(torch.finfo(ref.dtype).tiny))
            for s, (alive, version) in ctx.refs.items():
                x = alive()
                if x is None or x._version != version or x.untyped_storage().nbytes() == 0:
                    continue  # gone or changed since the forward: nothing to compare with
                rec = sample(env[s])
                ref = sample(x.detach()).to(rec.dtype)
                errs.append((ref - rec).norm() / ref.norm().clamp_min(torch.finfo(ref.dtype).tiny))
            region.last_error = torch.stack(errs).max().detach() if errs else None
        with torch.no_grad():
            for s, x in ctx.freed:
                # restore through .data: the producer may have saved this very tensor (an
                # in-place activation), and its version counter must stay untouched.
                # copy_ converts the (wider) stream itself: no converted temporary, and the
                # stream goes as soon as it is copied (popped: nothing after this reads it)
                rebuilt = env.pop(s, None)
                if rebuilt is not None and x.data.untyped_storage().nbytes() == 0:
                    x.data.untyped_storage().resize_(x.numel() * x.element_size())
                    x.data.copy_(value(rebuilt))
                del rebuilt
        in_grads = []
        for i, s in enumerate(region.inputs):
            g = grads.get(s)
            needed = ctx.needs_input_grad[4 + i]
            in_grads.append(g.to(ctx.in_dtypes[i]) if (g is not None and needed) else None)
        env.clear()
        grads.clear()
        params = region.param_list
        pg = [pgrads.pop(id(p), None) for p in params]
        return (None, None, None, None, *in_grads, *pg)


def _check_read_again(ctx: Any, region: "Region") -> None:
    """Raise as autograd does when the graph was freed or a weight was edited in place."""
    if ctx.outs is None or ctx.residuals is None:
        raise RuntimeError(
            f"reversible region {region.id!r}: trying to backward through the graph a second time "
            "(its kept outputs were released by the first backward). Specify retain_graph=True "
            "in the first backward() or autograd.grad() call if you need to backward a second time")
    for x, version in ctx.read_again:
        if x._version != version:
            what = "a weight" if isinstance(x, nn.Parameter) else "an input it keeps"
            raise RuntimeError(
                f"reversible region {region.id!r}: one of the variables needed for gradient computation "
                f"has been modified by an inplace operation: {what} of shape {list(x.shape)} is at version "
                f"{x._version}; expected version {version} instead. Call backward() before changing "
                "weights in place (optimizer.step() after loss.backward())")


def _kept_outputs(ctx: Any, region: "Region") -> list[Tensor]:
    """The region's outputs as forward returned them; released from ``ctx`` unless the
    graph is kept for another backward. Raises, like autograd's saved tensors, when the
    caller has since modified one in place (the rebuild would start from wrong values)."""
    outs: list[Tensor] = ctx.outs
    for k, (y, version) in enumerate(zip(outs, ctx.versions)):
        if y._version != version:
            raise RuntimeError(
                f"reversible region {region.id!r}: its output {k} was modified by an in-place "
                f"operation after the forward (version {version} -> {y._version}), so the "
                "activations cannot be rebuilt from it; use an out-of-place operation (e.g. "
                "y = y * 2 instead of y *= 2) or clone the output first")
    if not _keeps_graph():
        ctx.outs = None
    return outs


def _overlapping(t: Tensor) -> bool:
    """Whether elements of ``t`` share memory (an expanded tensor: no in-place writes)."""
    return any(st == 0 and n > 1 for st, n in zip(t.stride(), t.shape))


def _keeps_graph() -> bool:
    """Whether the running backward keeps the graph (``retain_graph``); True when unknown."""
    probe = getattr(torch._C._autograd, "_get_current_graph_task_keep_graph", None)
    try:
        return True if probe is None else bool(probe())
    except RuntimeError:  # not inside a graph task
        return True


def _compiling() -> bool:
    compiler = getattr(torch, "compiler", None)
    return bool(compiler is not None and compiler.is_compiling())


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
        self.param_list: list[nn.Parameter] = []
        self._tree: list[nn.Module] | None = None

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
        if mode == "standard":
            return self.run(inputs, dtype)
        if mode == "checkpoint":
            return self._checkpointed(inputs, dtype)
        if self._tree is None:
            self._tree = _owners(self.modules)
        self.param_list = _params_of(self._tree)
        wants_grad = torch.is_grad_enabled() and (
            any(x.requires_grad for x in inputs) or bool(self.param_list))
        if not wants_grad:
            with torch.no_grad():
                return self.run(inputs, dtype, stream, in_place=True)
        outs = _reversible(self, inputs, dtype, stream or inputs[0].dtype)
        if self.flow:
            self.logdet, outs = outs[-1], outs[:-1]
        return outs

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
            outs = checkpoint(part, *[env[s] for s in reads], use_reentrant=False, context_fn=context)
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


def _reversible_impl(region: Region, inputs: Sequence[Tensor], dtype: torch.dtype,
                     stream: torch.dtype | str) -> tuple[Tensor, ...]:
    return _RegionFunction.apply(region, dtype, stream, len(inputs), *inputs, *region.param_list)


# The Function frees and restores storage and records RNG states: run it eagerly
# even inside torch.compile (a graph break around each region).
_disable = getattr(getattr(torch, "compiler", None), "disable", None)
_reversible = _disable(_reversible_impl) if _disable is not None else _reversible_impl
