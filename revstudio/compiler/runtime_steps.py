"""Steps of the reversible runtime: what one region step does forward, inverse and backward.

A step reads and writes numbered value slots: ``Coupling`` (``y = a + s * F(b)``
with the fused backward) and ``Invertible`` (any module with ``inverse``); the
steps that only rearrange slots (Slice, Cat, Rename) are in ``runtime_layout``.
Here also the bookkeeping all steps share (owned buffers updated in place); what a
recomputation must see as its forward did is in ``runtime_recompute``.
Slot values are streams of ``runtime_streams`` (a tensor or a compensated pair).
``runtime`` runs a list of steps as one autograd Function. Imports only torch and
the standard library: the code exporter inlines this file verbatim.
"""
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from .runtime_grad import vjp
from .runtime_recompute import _owners
from .runtime_streams import (
    Pair,
    Value,
    _expanded,
    _update,
    any_in,
    as_dtype,
    fresh_alias,
    like,
    no_correction,
    shares,
    sole,
    tensors,
    unshared,
    update_over,
    value,
)

Tensor = torch.Tensor


def _unique_params(modules: Sequence[nn.Module]) -> list[nn.Parameter]:
    return _params_of(_owners(modules))


def _params_of(owners: Sequence[nn.Module]) -> list[nn.Parameter]:
    seen: set[int] = set()
    out: list[nn.Parameter] = []
    for m in owners:
        for p in m._parameters.values():
            if p is not None and p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


def _is_stochastic(modules: Sequence[nn.Module]) -> bool:
    return any(isinstance(m, nn.modules.dropout._DropoutNd) or getattr(m, "stochastic", False)
               for root in modules for m in root.modules())


class Owned:
    """Which slots hold tensors the runtime allocated itself and nothing else refers to.

    Only those may be overwritten in place (a coupling's stream update, a gradient
    sum), which saves an allocation, a copy and a page-faulting fresh buffer per
    step. ``values`` are stream slots, ``grads`` gradient slots, ``params``
    parameter-gradient sums (by ``id`` of the parameter). Tensors that came from
    the caller or from autograd are never owned: they may be shared.
    ``unneeded``: region inputs whose gradient nobody asked for (not computed).
    ``whole``: stream updates may work in whole-stream pieces (the reversible forward,
    whose temporaries are not at the step's peak: backward's are).
    """

    __slots__ = ("grads", "params", "unneeded", "values", "whole")

    def __init__(self) -> None:
        self.values: set[int] = set()
        self.grads: set[int] = set()
        self.params: set[int] = set()
        self.unneeded: frozenset[int] = frozenset()  # region inputs whose gradient nobody wants
        self.whole = False


def _accumulate(acc: dict[int, Tensor], owned: set[int], key: int, g: Tensor | None) -> None:
    """``acc[key] += g``: in place into a sum the runtime owns, else a new (owned) sum;
    the first gradient is kept as it is (not owned: it may be shared)."""
    if g is None:
        return
    old = acc.get(key)
    if old is None:
        acc[key] = g
        owned.discard(key)
    elif key in owned and old.shape == g.shape and (
            old.dtype == g.dtype or old.dtype == torch.promote_types(old.dtype, g.dtype)):  # (an op call: asked only when needed)
        old.add_(g)
    else:
        acc[key] = old + g
        owned.add(key)


# The slot of a region's log-determinant: the per-sample sum of log|det| of its flow steps
# (AffineCoupling, ActNorm, InvConv1x1). It is no value slot (those are >= 0): forward adds
# to it, and in backward its gradient is read, never popped, by every flow step.
LOGDET = -1


def _add_logdet(env: dict[int, Any], logdet: Tensor | None) -> None:
    if logdet is not None:
        env[LOGDET] = logdet if LOGDET not in env else env[LOGDET] + logdet


class Step:
    """One invertible step over value slots; subclasses define run, inverse and backward.

    ``run`` and ``backward`` take an :class:`Owned` inside the region Function
    (``None`` in plain, autograd-recorded execution): a step may then overwrite a
    slot it consumes when the runtime owns it and nothing reads it later
    (``dying``), and records which of its results the runtime owns.
    """

    consumes: tuple[int, ...] = ()   # slots rebuilt by this step in backward
    reads: tuple[int, ...] = ()      # slots only read (must be available in backward)
    produces: tuple[int, ...] = ()
    modules: Sequence[nn.Module] = ()  # immutable default: each step sets its own
    stochastic: bool = False
    flow: bool = False               # adds to the region's log-determinant (``LOGDET``)

    def slots_read(self) -> tuple[int, ...]:
        return self.consumes + self.reads

    def run(self, env: dict[int, Value], dtype: torch.dtype, own: "Owned | None" = None,
            dying: frozenset[int] = frozenset()) -> None:
        """Forward: read this step's input slots, write its output slots."""
        raise NotImplementedError

    def inverse(self, env: dict[int, Value], dtype: torch.dtype) -> None:
        """Rebuild the input slots from the output slots (which it removes)."""
        raise NotImplementedError

    def backward(self, env: dict[int, Value], grads: dict[int, Tensor], pgrads: dict[int, Tensor],
                 dtype: torch.dtype, own: "Owned | None" = None) -> None:
        """Rebuild the inputs and, in the same pass, turn output gradients into input and
        parameter gradients (accumulated into ``grads`` / ``pgrads``)."""
        raise NotImplementedError

    _tree: list[nn.Module] | None = None
    _norms: list[nn.Module] | None = None

    def tree(self) -> list[nn.Module]:
        """All modules of this step (cached: walking nn.Module trees per step is slow)."""
        if self._tree is None:
            self._tree = _owners(self.modules)
        return self._tree

    def params(self) -> list[nn.Parameter]:
        return _params_of(self.tree())

    def batch_norms(self) -> list[nn.Module]:
        if self._norms is None:
            self._norms = [m for m in self.tree() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
        return self._norms


class Coupling(Step):
    """``out = a + sign * fn(*b)``; ``fn`` runs in the compute dtype, the stream in its own."""

    def __init__(self, a: int, b: Sequence[int], out: int, sign: int, fn: Callable[..., Tensor],
                 modules: Sequence[nn.Module]) -> None:
        self.a, self.b, self.out, self.sign, self.fn = a, tuple(b), out, sign, fn
        self.consumes, self.reads, self.produces = (a,), tuple(b), (out,)
        self.modules = list(modules)
        self.stochastic = _is_stochastic(self.modules)

    def f(self, bs: Sequence[Value], dtype: torch.dtype) -> Tensor:
        return self.fn(*[as_dtype(value(x), dtype) for x in bs])

    def run(self, env: dict[int, Value], dtype: torch.dtype, own: Owned | None = None,
            dying: frozenset[int] = frozenset()) -> None:
        f = self.f([env[s] for s in self.b], dtype)
        reuse = own is not None and self.a in own.values and self.a in dying
        env[self.out] = _update(env[self.a], f, self.sign, reuse, own is not None and own.whole)
        if own is not None:
            own.values.discard(self.a)
            own.values.add(self.out)

    def inverse(self, env: dict[int, Value], dtype: torch.dtype) -> None:
        y = env.pop(self.out)
        env[self.a] = _update(y, self.f([env[s] for s in self.b], dtype), -self.sign, False)

    def backward(self, env: dict[int, Value], grads: dict[int, Tensor], pgrads: dict[int, Tensor],
                 dtype: torch.dtype, own: Owned | None = None) -> None:
        own = own or Owned()
        gy = grads.pop(self.out, None)
        gy_owned = self.out in own.grads
        need = gy is not None
        y = env.pop(self.out)
        y_owned = self.out in own.values
        own.values.discard(self.out)
        with torch.set_grad_enabled(need):
            b_in = []
            for s in self.b:
                x = as_dtype(value(env[s]).detach(), dtype)
                if y_owned and need and shares(y, x):
                    # y is rebuilt in place below, before F's backward: its elements are the
                    # runtime's alone, but a view of the same buffer shares the version counter
                    x = fresh_alias(x)
                b_in.append(x.requires_grad_(need and s not in own.unneeded))
            f = self.fn(*b_in)
        # a = y - sign * F(b), written over y when the runtime owns it, so the output and
        # the rebuilt input are never both alive; done before F's backward, so F's output
        # can go before its graph runs. Where nothing else holds F's output (its graph saved
        # no part of it), a pair's update uses it as one of its temporaries.
        if y_owned and isinstance(y, Pair) and f.dtype == y.hi.dtype and f.shape == y.hi.shape and sole(f):
            env[self.a] = update_over(y, f.detach(), -self.sign)
        else:
            env[self.a] = _update(y, f.detach(), -self.sign, y_owned)
        own.values.add(self.a)
        del y
        if gy is None:
            return
        _accumulate(grads, own.grads, self.a, gy)
        if gy_owned and grads[self.a] is gy:
            own.grads.add(self.a)
        res: Sequence[Tensor | None] = ()
        params: list[nn.Parameter] = []
        if f.requires_grad:
            params = self.params()
            gf = gy if self.sign > 0 else -gy
            gf = as_dtype(gf, f.dtype)
            wrt = [b for b in b_in if b.requires_grad]
            root: Any = _edge(f) if _edge is not None else f
            if root is not f:
                del f  # F's output is not needed by its own backward (unless its graph saved it)
            res = vjp((root,), [*wrt, *params], (gf,))
            del root
            if len(wrt) < len(b_in):  # no gradient for inputs nobody needs
                found = iter(res)
                res = [next(found) if b.requires_grad else None for b in b_in] + list(found)
            if gy_owned and any_in(res, gy):
                own.grads.discard(self.a)  # F passed its gradient through: gy is shared now
        for s, g in zip(self.b, res):
            _accumulate(grads, own.grads, s, g)
        for p, g in zip(params, res[len(self.b):]):
            _accumulate(pgrads, own.params, id(p), g)


# F's backward run from its output's gradient edge, so the output tensor itself can be
# released first (torch >= 2.2; else the tensor is the root)
_edge = getattr(torch.autograd.graph, "get_gradient_edge", None)


class Invertible(Step):
    """A module with ``forward(*xs) -> tuple`` and ``inverse(*ys) -> tuple``.

    ``cast``: the module computes (it does more than move values around), so it runs in the
    compute dtype rather than the (possibly wider) stream dtype, and on a compensated pair's
    value, not on its hi and lo apart.
    """

    def __init__(self, module: nn.Module, ins: Sequence[int], outs: Sequence[int], cast: bool) -> None:
        self.module, self.cast = module, cast
        self.consumes, self.produces = tuple(ins), tuple(outs)
        self.modules = [module]
        self.stochastic = _is_stochastic(self.modules)
        self.flow = hasattr(module, "logdet")  # a flow layer records its log|det| as ``logdet``

    def _call(self, fn: Callable[..., tuple[Tensor, ...]], xs: Sequence[Value], dtype: torch.dtype
              ) -> list[Value]:
        """``fn`` on stream values, giving stream values of the same kind."""
        if xs and isinstance(xs[0], Pair):
            if self.cast:  # computed in the model's dtype: a pair with no correction
                return [like(xs[0], y) for y in fn(*[as_dtype(value(x), dtype) for x in xs])]
            # a layer that only rearranges values (Permute, Squeeze, Reshape, Flatten) rearranges
            # hi and lo alike; a correction of zeros that takes no memory stays one (rearranged,
            # it would be a stream of zeros)
            his = fn(*[x.hi for x in xs])  # type: ignore[union-attr]
            if all(_expanded(x.lo) for x in xs):  # type: ignore[union-attr]
                return [Pair(h, no_correction(h)) for h in his]
            los = fn(*[x.lo for x in xs])  # type: ignore[union-attr]
            return [Pair(h, lo) for h, lo in zip(his, los)]
        if self.cast:
            return [as_dtype(y, value(xs[0]).dtype) for y in fn(*[as_dtype(value(x), dtype) for x in xs])]
        return list(fn(*xs))

    def run(self, env: dict[int, Value], dtype: torch.dtype, own: Owned | None = None,
            dying: frozenset[int] = frozenset()) -> None:
        xs = [env[s] for s in self.consumes]
        for s, y in zip(self.produces, self._call(self.module.__call__, xs, dtype)):
            env[s] = y
        if self.flow:
            _add_logdet(env, getattr(self.module, "logdet", None))
        if own is not None:  # a module may return views of its inputs: own none of it, unless...
            moved = self._rearranges(self.consumes, own.values) and all(s in dying for s in self.consumes)
            own.values.difference_update(self.consumes)
            if moved:  # ...the inputs were the runtime's and nothing reads them after this step
                own.values.update(self.produces)

    def _rearranges(self, slots: Sequence[int], owned: set[int]) -> bool:
        """Whether this step only rearranges values the runtime owns (Permute, Squeeze, Reshape,
        Flatten: ``NodeSpec.layout_only``), its ``slots`` (what it reads forward, what it rebuilds
        from backward), so what it makes of them are views or copies of that memory alone, the
        runtime's to update in place (else every update after it, in the order it runs, made
        new buffers: three temporaries and a new pair each)."""
        return not self.cast and all(s in owned for s in slots)

    def inverse(self, env: dict[int, Value], dtype: torch.dtype) -> None:
        ys = [env.pop(s) for s in self.produces]
        inverse: Any = self.module.inverse
        for s, x in zip(self.consumes, self._call(inverse, ys, dtype)):
            env[s] = x

    def backward(self, env: dict[int, Value], grads: dict[int, Tensor], pgrads: dict[int, Tensor],
                 dtype: torch.dtype, own: Owned | None = None) -> None:
        own = own or Owned()
        pair = isinstance(env[self.produces[0]], Pair)
        gys = [grads.pop(s, None) for s in self.produces]
        moved = self._rearranges(self.produces, own.values)
        own.values.difference_update(self.produces)
        own.grads.difference_update(self.produces)
        read = _storages(env, self.produces) if self.cast and not moved else None
        with torch.no_grad():
            self.inverse(env, dtype)
        if moved:
            own.values.update(self.consumes)
        elif read is not None:  # its inverse computed them anew: the runtime's to update in place
            # (forward leaves a result of a layer with weights unowned: a region output it makes
            # keeps its correction of zeros that takes no memory, as the estimate counts)
            own.values.update(_computed(env, self.consumes, read))
        gld = grads.get(LOGDET) if self.flow else None
        if all(g is None for g in gys) and gld is None:
            return
        params = self.params()
        with torch.enable_grad():
            # recomputed on what the layer reads (a pair's hi): gradients need no correction
            xs = [value(env[s]).detach().requires_grad_(True) for s in self.consumes]
            if pair:
                ys = list(self.module(*[as_dtype(x, dtype) for x in xs] if self.cast else xs))
            else:
                ys = [value(y) for y in self._call(self.module.__call__, xs, dtype)]
        outs = [(y, as_dtype(g, y.dtype)) for y, g in zip(ys, gys) if g is not None and y.requires_grad]
        logdet = getattr(self.module, "logdet", None)
        if isinstance(logdet, Tensor) and logdet.requires_grad:
            if gld is not None:
                outs.append((logdet, as_dtype(gld, logdet.dtype)))
            # the rerun's log-det, which the layer keeps as ``logdet``, would keep its graph alive
            # until the next forward where the loss reads none (an InvConv1x1's slogdet factors,
            # C x C): the graph goes with the vjp below, or with this function
            self.module.logdet = logdet.detach()
        if not outs:
            return
        res = vjp([o[0] for o in outs], [*xs, *params], [o[1] for o in outs])
        gdtype = outs[0][1].dtype
        for s, g in zip(self.consumes, res):
            _accumulate(grads, own.grads, s, None if g is None else as_dtype(g, gdtype))
        for p, g in zip(params, res[len(xs):]):
            _accumulate(pgrads, own.params, id(p), g)


def _storages(env: dict[int, Value], slots: Sequence[int]) -> set[int]:
    """The addresses of the storages of what ``slots`` hold."""
    return {t.untyped_storage().data_ptr() for s in slots for t in tensors(env[s])}


def _computed(env: dict[int, Value], slots: Sequence[int], read: set[int]) -> list[int]:
    """Of ``slots``, those holding what a layer with weights rebuilt from what it read (``read``:
    the storages of its outputs, which its inverse read): new, dense buffers of their own, on
    none of those storages (a result that is its input, or a view of it, or a buffer the layer
    keeps, is not the runtime's to write over). A pair's correction may be an expanded zero
    (``runtime_streams.like``): the in-place updates make it anew. Before, every update backward
    ran before an ActNorm or InvConv1x1 made new buffers: a random network's peak at batch 1
    held nine half-streams of temporaries where the estimate counts three (11.4 % over it)."""
    found = []
    for s in slots:
        parts = [t for t in tensors(env[s]) if not _expanded(t)]
        if parts and all(unshared(t) and t.untyped_storage().data_ptr() not in read for t in parts):
            found.append(s)
    return found
