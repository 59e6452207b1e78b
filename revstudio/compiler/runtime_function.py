"""The reversible region's autograd Function: forward keeps only the outputs, backward rebuilds.

``_RegionFunction.forward`` runs a region's steps without autograd, keeps its
outputs as detached aliases (plus, for wide or paired streams, the rounding
residual) and may release inputs it can rebuild; ``backward`` walks the steps in
reverse, rebuilding each step's inputs and getting its gradients in one pass,
checks that nothing it reads again was edited in place, and measures the
inversion error on a few samples. ``runtime.Region`` applies it. Imports only
torch and the standard library: the code exporter inlines this file verbatim.
"""
import contextlib
import functools
import sys
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from .runtime_recompute import RngState, StateAs, TrainedAs, frozen_batch_stats
from .runtime_steps import LOGDET, Owned, _accumulate
from .runtime_streams import (
    SAMPLES,
    Pair,
    Value,
    _expanded,
    _sample_index,
    _shares,
    _update,
    alone,
    as_dtype,
    is_pair,
    sample,
    tensors,
    to_stream,
    value,
)

if TYPE_CHECKING:
    from .runtime import Region

Tensor = torch.Tensor


def _owns_storage(x: Tensor) -> bool:
    """Whether ``x`` covers the whole of its storage (no view: its own base, every byte once, in
    any order of its dimensions: an InvConv1x1's mix leaves channels outermost)."""
    return (x._base is None and x.storage_offset() == 0 and x.numel() > 0
            and x.untyped_storage().nbytes() == x.numel() * x.element_size() and _permuted(x))


def _permuted(x: Tensor) -> bool:
    """Whether ``x``'s strides are a dense layout's in some order of its dimensions (contiguous
    and channels_last among them)."""
    expected = 1
    for stride, size in sorted((st, s) for s, st in zip(x.shape, x.stride()) if s != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _releasable(x: Tensor, outputs: Sequence[Tensor]) -> bool:
    """Only a tensor that solely owns its whole storage, shared with no output, may be released."""
    if not _owns_storage(x):
        return False
    ptr = x.untyped_storage().data_ptr()
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
        if not _HOLDERS:
            _count_holders()
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
                if s not in region.given or s in region.free:  # (a given input kept is its own reference)
                    ctx.samples[s] = sample(env[s])
        ctx.rng = {}
        # what backward's recomputation runs in: each module's train/eval state, the weights and
        # buffers (torch.func.functional_call swaps others in for the forward alone)
        ctx.training = [m.training for m in region.tree()]
        ctx.state = [d[k] for d, k in region.state_slots()]
        ctx.params = region.param_list
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
                y = as_dtype(t.hi, out_dtype)
                if any(_shares(y, x) for x in inputs):
                    y = y.clone()
                outs.append(y)
                # (a copied stream no step updated still has its correction of zeros that takes
                # no memory: its residual is kept as real zeros, as the copy's were before and as
                # the estimate counts; a stream read without a copy keeps its expanded zeros)
                residuals.append(torch.zeros_like(t.hi) if _expanded(t.lo) and s in own.values else t.lo)
                del t
                continue
            y = as_dtype(t, out_dtype)
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
                if s in region.free and s not in region.held and _releasable(x, outs):
                    ctx.freed.append((s, x))
                    x.data.untyped_storage().resize_(0)
        # An input the caller passed to the model (``given``: its batch) is its own reference
        # for the inversion error: no samples of it are kept (they would sit at the peak), only
        # a weak reference, which never keeps it alive (if the caller lets it go or edits it
        # before backward, that input goes unmeasured).
        ctx.refs = {}
        freed = {s for s, _ in ctx.freed}
        if region.track_error:
            for i, s in enumerate(region.inputs):
                if s in region.given and s not in freed and s not in region.side and s not in ctx.refs:
                    ctx.samples.pop(s, None)
                    ctx.refs[s] = (weakref.ref(inputs[i]), inputs[i]._version)
        if region.flow:  # the log-determinant is one more output, so its gradient reaches backward
            logdet = inputs[0].new_zeros(inputs[0].shape[0], dtype=dtype) if logdet is None else logdet.clone()
            return (*outs, logdet)
        return tuple(outs)

    @staticmethod
    @_first_order_only
    def backward(ctx, *gouts: Tensor | None) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        spent = _spent_gradients(gouts)
        region: Region = ctx.region
        _check_read_again(ctx, region)
        own = Owned()
        own.unneeded = frozenset(s for i, s in enumerate(region.inputs) if not ctx.needs_input_grad[4 + i]
                                 and region.inputs.count(s) == 1)
        env: dict[int, Value] = {}
        y = r = None
        keeps = _keeps_graph()
        kept = _kept_outputs(ctx, region, keeps)
        for s, y, r in zip(region.outputs, kept, ctx.residuals):
            if r is None:
                env[s] = y  # the caller's output: never overwritten
            elif is_pair(ctx.stream):
                # the pair is the output (a copy: the caller's tensor is never overwritten) and
                # the residual, taken over unless another backward will ask for it
                env[s] = Pair(y.to(torch.float32, copy=True), r.clone() if keeps or _expanded(r) else r)
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
        for k, s in enumerate(region.outputs):  # (no loop name may keep a gradient: see _release_spent)
            if gouts[k] is not None:  # gradients stay in the model's dtype, like plain autograd's
                _accumulate(grads, own.grads, s, gouts[k])
        if region.flow and gouts[-1] is not None:
            grads[LOGDET] = gouts[-1]  # read by every flow step
        pgrads: dict[int, Tensor] = {}
        # Autocast caches its low-precision copy of every leaf that requires grad until the
        # context ends: meant for weights, it also holds each step's rebuilt inputs (leaves
        # here), one copy per layer that reads them, for the whole region: memory growing with
        # the depth (measured: 21 KB a block of a 16-channel RevNet at batch 8). Dropped after
        # each step; a later step's layers have weights of their own to cast anyway.
        cast = ctx.autocast[1]
        with _autocast_as(*ctx.autocast), TrainedAs(region.tree(), ctx.training), \
                StateAs(region.state_slots(), ctx.state):
            for i in range(len(region.steps) - 1, -1, -1):
                step = region.steps[i]
                norms = step.batch_norms()
                if i in ctx.rng or norms:
                    replay = ctx.rng[i].replay() if i in ctx.rng else contextlib.nullcontext()
                    with frozen_batch_stats(norms), replay:
                        step.backward(env, grads, pgrads, ctx.dtype, own)
                else:
                    step.backward(env, grads, pgrads, ctx.dtype, own)
                if cast:
                    torch.clear_autocast_cache()
                if spent:
                    spent = _release_spent(spent)
        if ctx.samples or ctx.refs:
            errs = []
            for s, ref in ctx.samples.items():
                errs.append(_error_of_sample(ref, env[s], spare=not keeps))
            for s, (alive, version) in ctx.refs.items():
                x = alive()
                if x is None or x._version != version or x.untyped_storage().nbytes() == 0:
                    continue  # gone or changed since the forward: nothing to compare with
                errs.append(_error_against(x.detach(), env[s]))
            region.error_owner.last_error = (None if not errs else errs[0].detach() if len(errs) == 1
                                 else torch.stack(errs).max().detach())
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
        if not keeps:
            # no other backward asks: the rebuilt inputs, the side inputs and the samples go
            # with their last other holder, not with the whole graph once backward ends (a
            # region's restored input outlived it through the next region's backward)
            ctx.freed, ctx.side, ctx.samples, ctx.refs, ctx.read_again, ctx.state = [], [], {}, {}, [], []
        in_grads = []
        for i, s in enumerate(region.inputs):
            g = grads.get(s)
            needed = ctx.needs_input_grad[4 + i]
            in_grads.append(as_dtype(g, ctx.in_dtypes[i]) if (g is not None and needed) else None)
        env.clear()
        grads.clear()
        params = ctx.params  # (the region's list now may be another forward's)
        pg = [pgrads.pop(id(p), None) for p in params]
        return (None, None, None, None, *in_grads, *pg)


def _holders(tensors: list[Tensor]) -> list[int]:
    return [sys.getrefcount(t) for t in tensors]


def _spent_gradients(gouts: Sequence[Tensor | None], record: list[int] | None = None) -> list[Tensor]:
    """The incoming gradients this backward alone holds. Autograd hands them over and reads
    them no more, so each may be released as soon as the steps stop reading it: the region's
    backward spans all its blocks, where a Function per block would have let it go after the
    last (one region output's gradient at the peak, measured; see benchmarks/README.md).
    Only a whole, dense storage held by nothing else: no other name in Python (a hook that
    kept it, the caller's own ``gradient=``, a second slot of ``gouts``), no other owner in
    C++ (a retained ``.grad``), no view of it. The Python names are counted against the same
    calls in a probe Function's backward (:func:`_count_holders`); ``record``: that probe."""
    if _tensor_users is None or (record is None and (len(_HOLDERS) != 2 or _compiling())):
        return []
    found = [g for g in gouts if g is not None and alone(g) and _owns_storage(g) and _tensor_users(g) == 1]
    counts = _holders(found)
    if record is not None:
        record.extend(counts[:1])
        return found
    return [g for g, n in zip(found, counts) if n == _HOLDERS[0]]


def _release_spent(spent: list[Tensor], record: list[int] | None = None) -> list[Tensor]:
    """Release each of ``spent`` that no step reads any more (no name, no view of it), by
    shrinking its storage as the forward does with the inputs it frees; the rest."""
    counts = _holders(spent)
    if record is not None:
        record.extend(counts[:1])
        return spent
    left = []
    for g, n in zip(spent, counts):
        if n == _HOLDERS[1] and alone(g):
            g.untyped_storage().resize_(0)
        else:
            left.append(g)
    return left


class _HolderProbe(torch.autograd.Function):
    """A backward shaped as the region's, whose one gradient nothing else holds."""

    @staticmethod
    def forward(ctx, x: Tensor, record: list[int]) -> Tensor:  # type: ignore[override]
        ctx.record = record
        return x.clone()

    @staticmethod
    @_first_order_only
    def backward(ctx, *gouts: Tensor | None) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        spent = _spent_gradients(gouts, ctx.record)
        spent = _release_spent(spent, ctx.record)
        return None, None


_HOLDERS: list[int] = []  # the probe's counts: at the start, and once the steps let go
# How many owners a tensor has in C++ (torch's own count; None where this torch has no such call)
_tensor_users = getattr(torch.Tensor, "_use_count", None)


def _count_holders() -> None:
    """Count, once, the names the backward's own frames hold on a gradient (the engine's
    argument tuple and the wrapper's), in this Python and torch, by running the probe. Not
    while compiling or in inference mode (no backward can run there): the next forward counts."""
    if _tensor_users is None or _compiling() or torch.is_inference_mode_enabled():
        return
    record: list[int] = []
    try:
        with torch.enable_grad():
            x = torch.zeros(2, requires_grad=True)
            torch.autograd.backward((_HolderProbe.apply(x, record) * 2).sum())
    except RuntimeError:
        record = []
    # the probe holds nothing more at its second count than at its first: counts that differ
    # mean something this code does not know of took part, and nothing is ever released
    _HOLDERS[:] = record if len(record) == 2 and record[0] == record[1] else [-1, -1]


def _autocast_as(device_type: str, enabled: bool, dtype: torch.dtype) -> contextlib.AbstractContextManager[Any]:
    """The forward's autocast state for the recomputation: entered only where the backward runs
    in another one (entering autocast costs about as much as a small stream update)."""
    if torch.is_autocast_enabled(device_type) == enabled and (
            not enabled or torch.get_autocast_dtype(device_type) == dtype):
        return contextlib.nullcontext()
    return torch.autocast(device_type, dtype=dtype, enabled=enabled)


def _relative_error(ref: Tensor, rec: Tensor) -> Tensor:
    """|ref - rec| / |ref|, the difference written over ``rec`` (a sample made for it): at a
    tiny model's peak, a third sample-sized temporary was most of its excess over RevLib's."""
    scale = ref.norm().clamp_min(torch.finfo(ref.dtype).tiny)
    return torch.sub(ref, rec, out=rec).norm() / scale


def _error_of_sample(ref: Tensor, v: Value, spare: bool) -> Tensor:
    """The relative inversion error of the rebuilt stream value ``v`` against ``ref``, the sample
    the forward kept of it (a pair's ``(ref - hi) - lo``, in ref's float64). ``spare``: no other
    backward reads ``ref`` (the graph is not kept), so the difference is written over it; a
    fresh float64 sample of ``v`` beside a float32 take was two sample-sized temporaries more,
    at the end of backward, beside the rebuilt inputs and every gradient: 3 KB over a small
    region's peak at batch 1."""
    return _error_into(ref if spare else ref.clone(), v)


def _error_into(d: Tensor, v: Value) -> Tensor:
    """|d - v| / |d| on the samples, ``d`` a sample of the reference (:func:`sample`'s values)
    the difference is written over, one take of each of ``v``'s tensors at a time."""
    scale = d.norm().clamp_min(torch.finfo(d.dtype).tiny)
    for t in tensors(v):
        d.sub_(torch.take(t, _sample_index(t, SAMPLES)))
    return d.norm() / scale


def _error_against(x: Tensor, v: Value) -> Tensor:
    """The relative inversion error of the rebuilt stream value ``v`` against ``x``, the input the
    caller passed (its own reference), on the samples. A pair's is ``(x - hi) - lo`` in
    float32: ``x - hi`` is exact where the rebuild is close (Sterbenz), so this is the float64
    difference to within a rounding of itself, in two float32 samples at a time, not three
    float64 ones (at a tiny model's peak, they were most of its excess over RevLib's). A stream
    of at most SAMPLES values is sampled whole: the difference is taken of the tensors
    themselves, one temporary and no gathered copies (the same values, summed in memory order)."""
    if isinstance(v, Pair) and x.dtype == torch.float32 and x.shape == v.hi.shape:
        if x.numel() <= SAMPLES:
            scale = x.norm().clamp_min(torch.finfo(x.dtype).tiny)
            d = torch.sub(x, v.hi)
            return d.sub_(v.lo).norm() / scale
        return _error_into(torch.take(x, _sample_index(x, SAMPLES)), v)
    rec = sample(v)
    return _relative_error(sample(x).to(rec.dtype), rec)


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


def _kept_outputs(ctx: Any, region: "Region", keeps: bool) -> list[Tensor]:
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
    if not keeps:
        ctx.outs = None
    return outs


_keep_graph_probe = getattr(torch._C._autograd, "_get_current_graph_task_keep_graph", None)


def _keeps_graph() -> bool:
    """Whether the running backward keeps the graph (``retain_graph``); True when unknown."""
    try:
        return True if _keep_graph_probe is None else bool(_keep_graph_probe())
    except RuntimeError:  # not inside a graph task
        return True


def _compiling() -> bool:
    compiler = getattr(torch, "compiler", None)
    return bool(compiler is not None and compiler.is_compiling())
