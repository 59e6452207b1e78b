"""The peak of one training step, from shapes alone: a walk over forward and backward.

The step is a sequence of *units* (an ordinary layer; in reversible mode a whole
region; in checkpoint mode a checkpointed segment). Forward allocates each
unit's outputs, keeps what the unit saves for backward and frees a value when
its last reader ran and nothing keeps it. Backward walks the units in reverse:
each allocates the gradients of what it read (a view or an add passes its
gradient on instead, as a view of the same buffer; a second gradient for a
value is summed in place where the buffer there is that value's own, into a
new buffer otherwise), its parameters' gradients, and its own transient work
(a region rebuilding one step at a time, a segment recomputing itself); then
it frees what it kept and the gradients of its outputs. The peak is the most
bytes alive at any unit. Bytes exclude the weights and the input batch, as
``revstudio memory`` measures them. Torch-free; linear in the graph's size.

``peak_units`` makes the units of a checked graph per mode, ``peak_inline``
those of the layers inside Groups, Repeats and coupling nodes and the walks of
checkpoint recomputes; ``stream_updates`` counts the temporaries of the
runtime's in-place stream updates; ``peak_unit`` holds what a unit is and what a walk finds.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import replace

from .peak_grads import dying, outside_grads, outside_joins
from .peak_unit import Unit, Value, Walk


def simulate(units: list[Unit], nbytes: Callable[[Value], int], base: Callable[[Value], Value | None],
             needs_grad: Callable[[Value], bool], held: Iterable[Value] = (), *,
             outside: Iterable[Value] = (), early_stop: bool = False,
             seeds: Iterable[tuple[Value, bool]] = (), seed_bytes: Mapping[Value, int] | None = None,
             guarded: int = 0, dropped: int = 0, returned: Iterable[Value] = (), given: Iterable[Value] = ()) -> Walk:
    """Forward then backward over ``units`` (in execution order). ``outside``: values that exist
    before the walk and after it, counted elsewhere (a recomputed segment's inputs: a view of one
    makes nothing). ``early_stop``: forward stops once the last unit that keeps something for
    backward has kept it (before that unit runs where it keeps only what it read), and frees
    what nothing keeps (torch.utils.checkpoint's recompute). Torch recomputes when backward first
    unpacks a saved tensor: the units after the last that saves (a Squeeze, a Split, a view) run
    their backward before it, with nothing of the recompute alive; the recompute then runs with
    the gradients alive at that moment, and where it stops, the layer that saved last holds its
    outputs beside what it keeps (random network 18's ActNorm and InvConv1x1 at batch 2: 7.1 %
    under without them; network 66's segment ending in a Squeeze at batch 8: 4.4 % over).
    ``seeds``: values whose gradients exist when backward starts (a segment's outputs'), each
    with whether that gradient is shared with values outside (a view: it outlives the walk);
    ``seed_bytes``: of those, the ones whose gradient is a larger buffer, and its bytes;
    ``guarded``: bytes the recompute holds beside its layers while it runs (``Unit.guard_bytes``);
    ``dropped``: bytes of ``outside`` that exist only until the recompute has run (the inputs of a
    segment inside another's recompute: torch hands them over once, unpacked); ``returned``: values
    the recompute holds to its stop once made (a segment's outputs, which it returns); ``given``:
    values of ``outside`` whose gradient exists as backward starts, counted elsewhere and a view
    of a buffer others hold, so the first gradient the walk hands one is summed into a new buffer."""
    seeds, outside = list(seeds), list(outside)
    held_set = {b for b in (base(v) for v in held) if b is not None}
    ret = {b for b in (base(v) for v in returned) if b is not None}
    out_set = {b for b in (base(v) for v in outside) if b is not None}
    units = [_keeping_input(u, base, out_set) if u.extra_fwd is not None and u.grad else u for u in units]
    stop = len(units)
    last: Unit | None = None  # a checkpointed unit whose saving ends the recompute before it runs
    trigger = -1  # the unit whose backward starts the recompute (the last that saves)
    if early_stop:
        stop = max((i + 1 for i, u in enumerate(units) if u.grad and (u.saved or u.extra)), default=0)
        trigger = stop - 1
        if stop and _packs_first(units[stop - 1], base):
            stop -= 1
            last = units[stop]
    # (early_stop) once the first unit that saves has run its backward, the checkpoint holds its
    # inputs no more (random skip network 28, 13 % over in checkpoint mode counting them on)
    first = min((i for i, u in enumerate(units) if u.grad and (u.saved or u.extra)), default=-1) \
        if early_stop else -1
    held_peak = released_peak = -1
    readers = readers_of(units, base)
    count = readers.get
    live: dict[Value, int] = {}
    keepers: dict[Value, int] = {}  # a value kept by no one is not in it
    keeping = keepers.get
    total = 0
    peak, phase, at = 0, "forward", ""
    recompute = 0  # (early_stop) the most its forward holds, before the gradients alive then
    forward = 0  # (else) the most its forward holds
    for u in units[:stop] if stop < len(units) else units:
        mb = u.make_bases or ()
        made = 0
        for b in mb:
            if b is not None and b not in live and b not in out_set:
                n = live[b] = nbytes(b)
                total += n
                made += n
        if early_stop and u.work_stop is not None and u.grad and u is units[trigger]:
            recompute = max(recompute, total - made + u.work_stop)  # (it stops inside the layer)
        elif early_stop:  # what a layer keeps exists beside its outputs (its forward work holds it, if any)
            if not (u.output_last and u is units[stop - 1]):  # (else the recompute stops before they exist)
                made = 0
            recompute = max(recompute, total - made + max(u.work_fwd + made, (  # (its work is beside its outputs)
                u.extra if u.extra_fwd is None else u.extra_fwd) if u.grad else 0))
        else:
            forward = max(forward, total + u.work_fwd)
            if forward > peak:
                peak, phase, at = forward, "forward", u.name
        if u.grad:
            for b in u.saved:
                keepers[b] = keeping(b, 0) + 1
            total += u.extra
        for b in u.read_bases or ():
            if b in live:
                left = readers[b] = readers[b] - 1
                if left <= 0 and b not in keepers and b not in held_set and b not in ret:
                    total -= live.pop(b)
        for b in mb:
            if b in live and count(b, 0) <= 0 and b not in keepers and b not in held_set and b not in ret:
                total -= live.pop(b)
    if last is not None:  # it keeps its inputs, and the recompute stops there
        for b in last.saved:
            keepers[b] = keepers.get(b, 0) + 1
    if stop < len(units):  # the recompute stopped: no unit after it reads; what none keeps is gone
        for u in units[stop:]:
            for b in u.read_bases or ():
                if b in readers:
                    readers[b] -= 1
        for b in [b for b in live if b not in keepers and b not in held_set]:
            total -= live.pop(b)
    for b in [b for b in ret if b in live and b not in keepers and b not in held_set and count(b, 0) <= 0]:
        total -= live.pop(b)  # (the recompute's outputs go with it)
    kept = total
    # Gradients are buffers with references. A unit's backward (fresh) makes a new buffer for the
    # gradient of each value it read; a pass-through (a view layer, a Concat, an add) hands its
    # output's on as views. A second gradient for a value is then summed into the buffer there
    # where that buffer is that value's alone; otherwise (a view) into a new buffer, after the
    # unit's backward has returned and its outputs' gradients are gone. A buffer is freed with
    # its last reference.
    size_of: dict[int, int] = {}
    refs: dict[int, int] = {}
    grads: dict[Value, tuple[int, bool]] = {}  # value -> (its buffer, whether a view of it)
    last_id = 0
    gtotal = pgrads = 0
    sized = seed_bytes or _NONE
    for v, shared in seeds:
        if needs_grad(v) and v not in grads:
            last_id += 1
            n = sized.get(v) or nbytes(v)
            gtotal += n
            size_of[last_id], refs[last_id], grads[v] = n, 2 if shared else 1, (last_id, shared)
    handed = set(size_of)  # the seeds' buffers: gradients handed in, whose views are no new memory
    for v in given:
        if needs_grad(v) and v not in grads:
            last_id += 1
            size_of[last_id], refs[last_id], grads[v] = 0, 2, (last_id, True)
    place = len(units)
    for u in reversed(units):
        place -= 1
        unpacked = 0  # (the unit whose backward starts the recompute) the copy it made before it
        if place == trigger:  # the recompute runs now, beside what its backward made before it
            # (a copy of its outputs' gradient: beside it only where another value shares it)
            unpacked = u.unpack_bytes if any(grads.get(m, (0, False))[1] for m in u.makes) else 0
            now = recompute + guarded + gtotal + pgrads + dropped + unpacked
            held_peak = max(held_peak, now)
            if now > peak:
                peak, phase, at = now, "backward", u.name
        if not u.grad:
            continue
        let_go = place < first  # the checkpoint has let go of its inputs
        freed = 0  # (a late unit) the bytes of them that are gone as its backward returns
        recomputed = not early_stop or place <= trigger  # (before the recompute: nothing it makes exists)
        base_total = total if recomputed else dropped
        outs = []
        viewed = set()  # of those, the buffers it has as views only (not released as its own)
        seeded = 0  # (a late unit's recompute walk counts its outputs' gradients: their bytes)
        # a pass-through making as many values as it reads (a Split handing on the parts of a
        # joined value) hands each read the gradient of the value at the same place
        paired: list[int | None] | None = [] if not u.fresh and 1 < len(u.makes) == len(u.reads) else None
        late = u.late
        freed_now = -1  # (a moment ``Unit.work_freed`` prices after a checkpoint let go of its inputs)
        read_on = []  # (a region) of those, the buffers it reads on past their release (``Unit.grads_read_on``)
        for m in u.makes:
            g = grads.pop(m, None)
            if paired is not None:
                paired.append(None if g is None else g[0])
            if g is not None:
                outs.append(g[0])
                if m in u.grads_read_on:
                    read_on.append(g[0])
                if g[1]:
                    viewed.add(g[0])
                if late:
                    seeded += (u.seed_bytes or _NONE).get(m) or nbytes(m)
        for m in u.zero_grads:  # (a region's outputs nothing after it differentiates: zeros,
            last_id += 1  # the gradient of a stream an earlier step made: read on past the release)
            outs.append(last_id)
            read_on.append(last_id)
            n = size_of[last_id] = nbytes(m)
            refs[last_id] = 1
            gtotal += n
        came: list[tuple[Value, int, bool]] = []  # the gradients it hands its inputs
        new = 0
        sizes = u.grad_bytes or _NONE
        joined_id = None
        for i, v in enumerate(u.reads):
            if not needs_grad(v):
                continue
            if u.fresh and u.joined is not None and v in u.joined[0] and not u.joined[1] and outs:
                refs[outs[0]] += 1  # (views of its output's gradient: an add's segment hands that on)
                came.append((v, outs[0], True))
            elif u.fresh and u.joined is not None and v in u.joined[0]:
                if joined_id is None:
                    last_id += 1
                    joined_id = last_id
                    n = size_of[last_id] = u.joined[1]
                    refs[last_id] = 0
                    gtotal += n
                    new += n
                refs[joined_id] += 1
                came.append((v, joined_id, True))
            elif u.fresh:
                last_id += 1
                n = size_of[last_id] = sizes.get(v) or nbytes(v)
                refs[last_id] = 1
                gtotal += n
                new += n
                # a view of a larger buffer (a coupling's x2 a recompute hands back) takes a second
                # gradient into a new buffer, not into that one
                came.append((v, last_id, u.grads_viewed or n > nbytes(v)))
            elif paired is not None:
                bid = paired[i]
                if bid is not None:
                    refs[bid] += 1
                    came.append((v, bid, True))
            elif outs:
                refs[outs[0]] += 1
                # (an add hands the tensor itself: a view only where its output's gradient is one)
                came.append((v, outs[0], outs[0] in viewed if u.aliases else True))
        pgrads += u.params
        if late:  # its recompute's walk counts its outputs' gradients and its inputs' new ones,
            # and its parameters' as they appear; as it starts, none of them exist
            work = u.work_bwd
            if u.work_released is not None and recomputed:  # its kept inputs go part way through
                freed = _freed(u, live, keepers, count, held_set)
                if freed:
                    work = max(u.work_held, u.work_released - freed)
            now = max(base_total + gtotal - seeded - new + pgrads + work, base_total + gtotal + pgrads - u.params)
        else:
            # the copy lives on through the backward it was made for, beside the gradients that
            # backward makes (random skip network 103's ActNorm and LU InvConv1x1 segment at batch
            # 2: its einsum's input gradient, 1.4 % under with the copy gone at the recompute's end)
            work = max(u.work_bwd, unpacked) if unpacked else u.work_bwd
            if u.work_spent is not None:  # (a region: fresh)
                work = max(work, u.work_spent - dying(outs, viewed.union(read_on), size_of, refs))
            if u.work_outs is not None:
                work = max(work, u.work_outs - dying(outs, viewed, size_of, refs, views=True))
            if u.work_freed is not None:
                later = u.work_freed - dying(outs, viewed, size_of, refs, views=True) - _freed(
                    u, live, keepers, count, held_set)
                if place == first:  # (a checkpoint's first layer that saves: it has let go of its inputs)
                    freed_now = base_total + gtotal + pgrads + later
                else:
                    work = max(work, later)
            if u.params_last:
                work = max(work - (u.params if early_stop else u.params_last), 0)
            now = base_total + gtotal + pgrads + work
        if let_go:  # a moment after the checkpoint let go of its inputs (``Walk.released``)
            if now > released_peak:
                released_peak = now
        elif now > held_peak:
            held_peak = now
        if now > peak:
            peak, phase, at = now, "backward", u.name
        if freed_now > released_peak:
            released_peak = freed_now
            if freed_now > peak:
                peak, phase, at = freed_now, "backward", u.name
        drops = outs
        summed = released = False
        for v, bid, view in came:
            there = grads.get(v)
            if there is None:
                grads[v] = (bid, view)
                continue
            old, old_view = there
            if not old_view and refs[old] == 1:  # summed into the buffer there
                drops = [*drops, bid]
                continue
            if not summed:  # its outputs' gradients are gone before the sums are made, and
                # so is what a layer kept for its backward (autograd releases a node's saved
                # tensors before it hands on its gradients: a wired block whose F is one Conv,
                # summing x2's gradient beside the stem output that Conv kept, was 3-9 % over)
                summed = True
                for gone in drops:
                    left = refs[gone] = refs[gone] - 1
                    if left <= 0:
                        gtotal -= size_of.pop(gone)
                        del refs[gone]
                drops = []
                if not u.late:
                    released = True
                    total = _release(u, total, live, keepers, count, held_set)
                    base_total = total if recomputed else dropped
            last_id += 1
            n = size_of[last_id] = nbytes(v)
            refs[last_id] = 1
            gtotal += n
            moment = base_total - freed + gtotal + pgrads
            if let_go:
                if moment > released_peak:
                    released_peak = moment
            elif moment > held_peak:
                held_peak = moment
            if moment > peak:
                peak, phase, at = moment, "backward", u.name
            drops = [*drops, old, bid]
            grads[v] = (last_id, False)
        for gone in drops:
            left = refs[gone] = refs[gone] - 1
            if left <= 0:
                gtotal -= size_of.pop(gone)
                del refs[gone]
        if not released:
            total = _release(u, total, live, keepers, count, held_set)
        base_total = total if recomputed else dropped
        if u.work_after:
            after = base_total + gtotal + pgrads + u.work_after
            if let_go:
                released_peak = max(released_peak, after)
            else:
                held_peak = max(held_peak, after)
            if after > peak:
                peak, phase, at = after, "backward", u.name
    peak = max(peak, kept)
    return Walk(peak=peak, kept=kept, phase=phase, at=at,
                grads=outside_grads(outside, grads, size_of, nbytes) if early_stop else {}, forward=forward,
                joins=outside_joins(outside, grads, size_of, handed) if early_stop else [],
                held=max(held_peak, kept) if released_peak >= 0 else peak,
                released=released_peak if released_peak >= 0 else None)


_NONE: Mapping[Value, int] = {}


def _release(u: Unit, total: int, live: dict[Value, int], keepers: dict[Value, int],
             count: Callable[[Value, int], int], held_set: AbstractSet[Value]) -> int:
    """``total`` once unit ``u``'s backward has let go of what it kept (the storages no one
    else keeps, and its own extra bytes)."""
    # (a checkpoint segment with bytes held: the node that holds them is never run, and its
    # saved tensors' hooks keep the segment's recompute, its inputs with it, until the end)
    for b in () if u.late and u.extra_held else u.saved:
        left = keepers[b] = keepers.get(b, 0) - 1
        if left <= 0 and b in live and count(b, 0) <= 0 and b not in held_set:
            total -= live.pop(b)
    return total - (u.extra - u.extra_held)


def _keeping_input(u: Unit, base: Callable[[Value], Value | None], out_set: AbstractSet[Value]) -> Unit:
    """``u`` keeping its input where the bytes of its price that are that input itself
    (``Unit.extra_fwd``: a batch of one InvConv1x1's channels-first copy) are: the input then lives
    as long as ``u`` keeps it, counted once where another reader keeps it alive too (a skip from an
    ActNorm around the flow step it starts: random skip network 26 was 7 % over in standard mode at
    batch 1). An input the walk does not count (``outside``) is ``_reading_outside``'s."""
    b = base(u.reads[0]) if u.reads else None
    if b is None or b in out_set or u.extra_fwd is None:
        return u
    return replace(u, saved=frozenset({*u.saved, b}), extra=u.extra_fwd, extra_fwd=None, read_bases=None,
                   make_bases=None)


def _freed(u: Unit, live: dict[Value, int], keepers: dict[Value, int], count: Callable[[Value, int], int],
           held_set: AbstractSet[Value]) -> int:
    """Bytes unit ``u`` keeps that no one else keeps or reads later: what ``_release`` lets go of
    after its backward, which torch's checkpoint (a late unit) or a layer's own backward
    (``Unit.work_freed``) lets go of during it."""
    if u.extra_held:
        return 0
    return sum(live[b] for b in set(u.saved) if b in live and keepers.get(b, 0) <= 1 and count(b, 0) <= 0
               and b not in held_set)


def _packs_first(u: Unit, base: Callable[[Value], Value | None]) -> bool:
    """Whether ``u`` keeps only what it read: autograd packs a layer's inputs before the layer
    runs (its outputs after), so a recompute whose last kept tensor is one of them stops before
    it runs; a checkpointed unit keeps its inputs alone."""
    if u.late:
        return True
    if u.extra:
        return False
    made = {base(m) for m in u.makes}
    return not any(b in made for b in u.saved)


def readers_of(units: list[Unit], base: Callable[[Value], Value | None]) -> dict[Value, int]:
    """How many reads of each storage ``units`` make (resolving and caching their storages)."""
    readers: dict[Value, int] = {}
    count = readers.get
    for u in units:
        if u.read_bases is None:
            u.read_bases = [base(v) for v in u.reads]
        if u.make_bases is None:
            u.make_bases = [base(v) for v in u.makes]
        for b in u.read_bases:
            if b is not None:
                readers[b] = count(b, 0) + 1
    return readers
