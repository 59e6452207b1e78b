"""The peak of one training step, from shapes alone: a walk over forward and backward.

The step is a sequence of *units* (an ordinary layer; in reversible mode a whole
region; in checkpoint mode a checkpointed segment). Forward allocates each
unit's outputs, keeps what the unit saves for backward and frees a value when
its last reader ran and nothing keeps it. Backward walks the units in reverse:
each allocates the gradients of what it read (a view or an add passes its
gradient on instead), its parameters' gradients, and its own transient work
(a region rebuilding one step at a time, a segment recomputing itself); then
it frees what it kept and the gradients of its outputs. The peak is the most
bytes alive at any unit. Bytes exclude the weights and the input batch, as
``revstudio memory`` measures them. Torch-free; linear in the graph's size.

``peak_units`` makes the units of a checked graph per mode; ``stream_updates``
counts the temporaries of the runtime's in-place stream updates.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

Value = tuple[str, str]


@dataclass(slots=True)
class Unit:
    """One thing forward runs and backward undoes."""

    name: str
    reads: list[Value]               # values read from before the unit (raw, not resolved views)
    makes: list[Value]               # values it produces
    saved: AbstractSet[Value] = field(default_factory=frozenset)  # storages (resolved) it keeps for backward
    extra: int = 0                   # bytes of internal tensors it keeps for backward
    params: int = 0                  # parameter bytes: their gradients appear in its backward
    fresh: bool = True               # backward allocates its inputs' gradients (not a pass-through)
    work_fwd: int = 0                # transient bytes while it runs forward
    work_bwd: int = 0                # transient bytes while it runs backward
    grad: bool = True                # its outputs need gradients (its backward runs)
    # a checkpoint segment: backward first recomputes all of it (``work_bwd``), then frees each
    # recomputed tensor as it is used while its inputs' gradients build up, so those gradients
    # are complete only once the work is gone
    late: bool = False
    # a reversible region: the most its backward holds once the gradients of its outputs are
    # gone (net of them). The runtime releases a gradient autograd handed it once no step reads
    # it (after the last two computing steps, which turn it into the streams' own gradients),
    # where it is its own buffer, not a view or alias of another gradient; ``work_bwd`` is then
    # the most before that moment
    work_spent: int | None = None
    # the storages of ``reads`` and ``makes`` (resolved once; units are shared between the modes)
    read_bases: list[Value | None] | None = field(default=None, repr=False, compare=False)
    make_bases: list[Value | None] | None = field(default=None, repr=False, compare=False)


@dataclass
class Walk:
    """What the simulation found: the peak, where, and what was alive after forward."""

    peak: int
    kept: int
    phase: str
    at: str


def simulate(units: list[Unit], nbytes: Callable[[Value], int], base: Callable[[Value], Value | None],
             needs_grad: Callable[[Value], bool], held: Iterable[Value] = ()) -> Walk:
    """Forward then backward over ``units`` (in execution order)."""
    held_set = {b for b in (base(v) for v in held) if b is not None}
    readers: dict[Value, int] = {}
    for u in units:
        if u.read_bases is None:
            u.read_bases = [base(v) for v in u.reads]
        if u.make_bases is None:
            u.make_bases = [base(v) for v in u.makes]
        for b in u.read_bases:
            if b is not None:
                readers[b] = readers.get(b, 0) + 1
    live: dict[Value, int] = {}
    keepers: dict[Value, int] = {}  # a value kept by no one is not in it
    total = 0
    peak, phase, at = 0, "forward", ""
    for u in units:
        mb = u.make_bases or ()
        for b in mb:
            if b is not None and b not in live:
                n = live[b] = nbytes(b)
                total += n
        if total + u.work_fwd > peak:
            peak, phase, at = total + u.work_fwd, "forward", u.name
        if u.grad:
            for b in u.saved:
                keepers[b] = keepers.get(b, 0) + 1
            total += u.extra
        for b in u.read_bases or ():
            if b in live:
                left = readers[b] = readers[b] - 1
                if left <= 0 and b not in keepers and b not in held_set:
                    total -= live.pop(b)
        for b in mb:
            if b in live and readers.get(b, 0) <= 0 and b not in keepers and b not in held_set:
                total -= live.pop(b)
    kept = total
    grads: dict[Value, int] = {}
    aliases: set[Value] = set()  # gradients that are a view or alias of another one (a pass-through's)
    gtotal = 0
    pgrads = 0
    for u in reversed(units):
        if not u.grad:
            continue
        accumulate = new = passed = own = 0
        for m in u.makes:
            if m in grads:
                size = grads.pop(m)
                passed += size
                own += 0 if m in aliases else size
        gtotal -= passed
        for v in u.reads:
            if not needs_grad(v):
                continue
            size = nbytes(v) if u.fresh else passed
            passed = 0 if not u.fresh else passed
            if v in grads:
                accumulate = max(accumulate, size)  # summed into the buffer already there
                aliases.discard(v)
                continue
            grads[v] = size
            if not u.fresh:
                aliases.add(v)
            gtotal += size
            new += size
        pgrads += u.params
        if u.late:
            now = max(total + gtotal - new + pgrads + u.work_bwd + passed, total + gtotal + pgrads + accumulate)
        else:
            work = u.work_bwd + (passed if u.fresh else 0)
            if u.work_spent is not None:  # (a region: fresh)
                work = max(work, u.work_spent + passed - own)
            now = total + gtotal + pgrads + work + accumulate
        if now > peak:
            peak, phase, at = now, "backward", u.name
        for b in u.saved:
            keepers[b] = keepers.get(b, 0) - 1
            if keepers[b] <= 0 and b in live and readers.get(b, 0) <= 0 and b not in held_set:
                total -= live.pop(b)
        total -= u.extra
    return Walk(peak=max(peak, kept), kept=kept, phase=phase, at=at)
