"""Steps of the reversible runtime that only rearrange slots: Slice, Cat and Rename.

They cost no arithmetic: a Slice makes views (or, for a pair the runtime owns,
contiguous parts), a Cat of views that still lie where a Slice split them is
their base, and ``fuse_cat_slice`` turns a Cat followed by a matching Slice into
a Rename. Imports only torch and the standard library: the code exporter
inlines this file verbatim.
"""
from collections.abc import Sequence

import torch

from .runtime_steps import Owned, Step, _accumulate
from .runtime_streams import Value, apart, cat, gather, split, value, whole

Tensor = torch.Tensor


class Slice(Step):
    """Splits slot ``src`` along ``dim`` (after batch) into ``sizes`` (views; a pair the runtime
    owns gets contiguous parts, see ``runtime_streams.apart``); inverse: concat."""

    def __init__(self, src: int, outs: Sequence[int], sizes: Sequence[int], dim: int = 1) -> None:
        self.sizes, self.dim = list(sizes), dim
        self.consumes, self.produces = (src,), tuple(outs)
        self.modules = []

    def run(self, env: dict[int, Value], dtype: torch.dtype, own: Owned | None = None,
            dying: frozenset[int] = frozenset()) -> None:
        src = self.consumes[0]
        if own is not None and src in own.values and src in dying:
            # the runtime's own buffer, read by nothing else: a pair's parts get buffers of
            # their own (contiguous), which replace it
            parts = apart(env.pop(src), self.sizes, self.dim)
        else:
            parts = split(env[src], self.sizes, self.dim)
        for s, y in zip(self.produces, parts):
            env[s] = y
        del parts
        if own is not None and src in own.values:
            own.values.discard(src)
            if src in dying:  # the parts are disjoint views nothing else reads
                own.values.update(self.produces)

    def inverse(self, env: dict[int, Value], dtype: torch.dtype) -> None:
        env[self.consumes[0]] = cat([env.pop(s) for s in self.produces], self.dim)

    def backward(self, env: dict[int, Value], grads: dict[int, Tensor], pgrads: dict[int, Tensor],
                 dtype: torch.dtype, own: Owned | None = None) -> None:
        own = own or Owned()
        parts = [env.pop(s) for s in self.produces]
        gs = [grads.pop(s, None) for s in self.produces]
        src = self.consumes[0]
        # parts the runtime owns are often still the views it split off the region's
        # kept output and updated in place: then they are the whole already
        base = whole(parts, self.sizes, self.dim) if own.values.issuperset(self.produces) else None
        own.values.difference_update(self.produces)
        own.grads.difference_update(self.produces)
        wanted = src not in own.unneeded and any(g is not None for g in gs)
        # the parts' gradients, zeros (no memory) for missing ones, shaped before gather takes the parts
        filled = [g if g is not None else value(p).new_zeros(()).expand_as(value(p))
                  for p, g in zip(parts, gs)] if wanted else []
        env[src] = base if base is not None else gather(parts, self.dim)
        del parts, base
        own.values.add(src)
        if wanted:
            full = torch.cat(filled, self.dim)
            del filled
            fresh = src not in grads
            _accumulate(grads, own.grads, src, full)
            if fresh:
                own.grads.add(src)


class Cat(Step):
    """Concatenates slots along ``dim``; inverse: split back into the recorded sizes."""

    def __init__(self, ins: Sequence[int], out: int, sizes: Sequence[int], dim: int = 1) -> None:
        self.sizes, self.dim = list(sizes), dim
        self.consumes, self.produces = tuple(ins), (out,)
        self.modules = []

    def run(self, env: dict[int, Value], dtype: torch.dtype, own: Owned | None = None,
            dying: frozenset[int] = frozenset()) -> None:
        parts = [env[s] for s in self.consumes]
        base = None
        if own is not None and all(s in own.values and s in dying for s in self.consumes):
            base = whole(parts, self.sizes, self.dim)  # updated in place where they were split
        env[self.produces[0]] = base if base is not None else cat(parts, self.dim)
        if own is not None:
            own.values.difference_update(s for s in self.consumes if s in dying)
            own.values.add(self.produces[0])

    def inverse(self, env: dict[int, Value], dtype: torch.dtype) -> None:
        for s, x in zip(self.consumes, split(env.pop(self.produces[0]), self.sizes, self.dim)):
            env[s] = x

    def backward(self, env: dict[int, Value], grads: dict[int, Tensor], pgrads: dict[int, Tensor],
                 dtype: torch.dtype, own: Owned | None = None) -> None:
        own = own or Owned()
        out = self.produces[0]
        g = grads.pop(out, None)
        value_owned, grad_owned = out in own.values, out in own.grads
        own.values.discard(out)
        own.grads.discard(out)
        if value_owned and len(set(self.consumes)) == len(self.consumes):
            # the runtime's own buffer: a pair's parts get contiguous buffers of their own
            # (layers read them), else they are disjoint views of it
            for s, x in zip(self.consumes, apart(env.pop(out), self.sizes, self.dim)):
                env[s] = x
            own.values.update(self.consumes)
        else:
            self.inverse(env, dtype)
        if g is not None:
            for s, gx in zip(self.consumes, torch.split(g, self.sizes, self.dim)):
                fresh = s not in grads
                _accumulate(grads, own.grads, s, gx)
                if fresh and grad_owned and len(set(self.consumes)) == len(self.consumes):
                    own.grads.add(s)


class Rename(Step):
    """Slots ``outs`` are the tensors of slots ``ins``: what a Cat followed by the Slice that
    undoes it amounts to (between two coupling blocks), without the two copies."""

    def __init__(self, ins: Sequence[int], outs: Sequence[int]) -> None:
        self.consumes, self.produces = tuple(ins), tuple(outs)
        self.modules = []

    def run(self, env: dict[int, Value], dtype: torch.dtype, own: Owned | None = None,
            dying: frozenset[int] = frozenset()) -> None:
        for a, b in zip(self.consumes, self.produces):
            env[b] = env[a]
            if own is not None and a in own.values:
                own.values.discard(a)
                if a in dying:
                    own.values.add(b)

    def inverse(self, env: dict[int, Value], dtype: torch.dtype) -> None:
        for a, b in zip(self.consumes, self.produces):
            env[a] = env.pop(b)

    def backward(self, env: dict[int, Value], grads: dict[int, Tensor], pgrads: dict[int, Tensor],
                 dtype: torch.dtype, own: Owned | None = None) -> None:
        own = own or Owned()
        for a, b in zip(self.consumes, self.produces):
            env[a] = env.pop(b)
            if b in own.values:
                own.values.discard(b)
                own.values.add(a)
            g = grads.pop(b, None)
            g_owned = b in own.grads
            own.grads.discard(b)
            if g is not None:
                fresh = a not in grads
                _accumulate(grads, own.grads, a, g)
                if fresh and g_owned:
                    own.grads.add(a)


def fuse_cat_slice(steps: Sequence[Step], keep: Sequence[int]) -> list[Step]:
    """Replaces ``Cat`` immediately undone by a matching ``Slice`` with a :class:`Rename`
    (same values, no copies) when nothing else reads the concatenated slot."""
    out: list[Step] = []
    reads: dict[int, int] = {}
    for step in steps:
        for s in step.slots_read():
            reads[s] = reads.get(s, 0) + 1
    i = 0
    while i < len(steps):
        a = steps[i]
        b = steps[i + 1] if i + 1 < len(steps) else None
        if (isinstance(a, Cat) and isinstance(b, Slice) and b.consumes[0] == a.produces[0]
                and a.sizes == b.sizes and a.dim == b.dim and reads.get(a.produces[0]) == 1
                and a.produces[0] not in keep):
            out.append(Rename(a.consumes, b.produces))
            i += 2
            continue
        out.append(a)
        i += 1
    return out
