"""The walk of a checkpoint segment's recompute (``torch.utils.checkpoint``), alone.

When backward reaches a checkpointed segment, torch recomputes it from its kept inputs, up to
the last tensor its backward needs (early stop), then runs its backward as standard mode does.
``recompute_walk`` walks exactly that over the segment's layers (``peak_inline.Inline``'s
units): from its inputs, which the walk of the step counts, with the gradients of its outputs
seeded, to its inputs' new gradients. Torch-free.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from .peak import Unit, Value, readers_of, simulate
from .peak_units import UnitBuilder


def recompute_walk(ns: Any, units: list[Unit], reads: list[Value], makes: list[Value],
                   shared: AbstractSet[Value] = frozenset(), seed_bytes: Mapping[Value, int] | None = None,
                   top: bool = False) -> tuple[int, int, dict[Value, int], int | None, list[tuple[frozenset[Value], int]],
                              tuple[int, int | None]]:
    """A checkpointed run of ``units`` (a segment) in namespace ``ns`` (an ``Inline``): (the peak
    of its recompute and backward, walked alone from its inputs ``reads``; what its forward
    holds at most beyond its outputs ``makes`` and its inputs, keeping nothing; the inputs whose
    gradient is a view of a larger buffer, its outputs' gradient, and that buffer's bytes:
    ``Unit.grad_bytes``; that peak where the segment runs inside another's recompute, net of its
    inputs none of its layers keeps: ``Unit.work_nested``, None where it keeps all of them; the
    inputs whose gradients are one buffer, and its bytes: ``Unit.joined``; the peak split where the
    checkpoint lets go of the inputs it kept: ``Unit.work_held``, ``Unit.work_released``).
    ``shared``: the outputs whose gradients outlive its backward (views of
    a gradient other values have too: :func:`shared_outputs`); ``seed_bytes``: those whose
    gradient is a larger buffer the next segment hands back (a view of a joined gradient),
    its bytes. ``top``: a segment of the step's own walk, inside no other recompute, whose
    ``Unit.work_nested`` nothing reads: not walked (None)."""
    base = ns.base
    bases = [(m, base(m)) for u in units for m in u.makes]
    own = {m for m, b in bases if b == m}
    # the storages it makes views of that none of its units makes (the parts of a joined input
    # handed on unjoined) exist before it too
    before = [*reads, *{b for m, b in bases if b is not None and b != m and b not in own}]
    # an output the next step reads unjoined (a Concat a Split undoes: ``Inline.unjoined``) has
    # a gradient per part, each freed on its own; one only the step's outputs read has none of
    # its own (the walk of the step prices the loss's as a sum's: an expanded scalar)
    root = ns.root
    seeds = [(p, m in shared) for m in makes if not _loss_only(root, m) for p in _parts(ns, m)]
    # a layer whose copy of its input is that input itself (a batch of one InvConv1x1's) keeps
    # nothing more of an input the segment reads: that exists beside the walk, counted by the step's
    outside = {base(v) for v in reads}
    units = [_reading_outside(u, base, outside) for u in units]
    # a segment inside it holds the inputs the enclosing recompute unpacked for it only until its
    # own recompute has run (random network 15's G, a BiRNN, an Activation and a Conv, inside its
    # coupling's recompute: 5 % over with its input counted through its backward)
    given = {base(v) for v in before}
    units = [replace(u, work_bwd=u.work_nested) if u.late and u.work_nested is not None
             and not _kept_beside(u, units, base, given) else u for u in units]
    guarded = sum(u.guard_bytes for u in units)
    # the segment's function holds what it returns until it returns, or until the recompute stops
    # (``runtime._SegmentPart``, ``program.Part``): random skip network 65's region output an1.out,
    # read later by the InvConv1x1 alone, lived on beside the coupling's scale (5 % under)
    # (a segment none of whose layers saves anything recomputes nothing: the step's walk sums
    # its inputs' gradients as it hands them back, as it does an add's: random skip network 15)
    trigger = any(u.grad and (u.saved or u.extra) for u in units)
    walk = simulate(units, ns.nbytes, base, ns.needs_grad, outside=before, early_stop=True, seeds=seeds,
                    seed_bytes=seed_bytes, guarded=guarded, returned=makes,
                    given=_viewed_later(root, reads, makes) if top and trigger else ())
    outputs = {b for b in (base(v) for v in makes) if b is not None}
    forward = forward_peak(units, ns.nbytes, base, before) - sum(ns.nbytes(b) for b in outputs)
    kept = {b for u in units if u.grad for b in u.saved}
    dropped = sum(ns.nbytes(b) for b in outside if b is not None and b not in kept)
    nested = None
    if dropped and not top:
        nested = simulate(units, ns.nbytes, base, ns.needs_grad, outside=before, early_stop=True, seeds=seeds,
                          seed_bytes=seed_bytes, guarded=guarded, dropped=dropped, returned=makes).peak - dropped
    joins = [(vs & set(reads), n) for vs, n in walk.joins if len(vs & set(reads)) > 1]
    return (walk.peak, max(0, forward), {v: n for v, n in walk.grads.items() if v in reads}, nested, joins,
            (walk.held, walk.released))


def forward_peak(units: list[Unit], nbytes: Callable[[Value], int], base: Callable[[Value], Value | None],
                 outside: Iterable[Value] = ()) -> int:
    """The most bytes ``units`` hold at once running forward with nothing kept for backward (a
    checkpointed run's forward), beyond the values in ``outside``."""
    out_set = {b for b in (base(v) for v in outside) if b is not None}
    readers = readers_of(units, base)
    live: dict[Value, int] = {}
    total = peak = 0
    for u in units:
        for b in u.make_bases or ():
            if b is not None and b not in live and b not in out_set:
                n = live[b] = nbytes(b)
                total += n
        peak = max(peak, total + u.work_fwd)
        for b in u.read_bases or ():
            if b in live:
                readers[b] -= 1
                if readers[b] <= 0:
                    total -= live.pop(b)
        for b in u.make_bases or ():
            if b in live and readers.get(b, 0) <= 0:
                total -= live.pop(b)
    return peak


def _kept_beside(u: Unit, units: list[Unit], base: Any, outside: AbstractSet[Any]) -> bool:
    """Whether a value late unit ``u`` reads outlives its recompute: another of ``units`` keeps
    it, or it is (a part of) an input of the enclosing segment, which that segment keeps (a
    coupling's x2 handed on unjoined: held-out random network 225's F, an LSTM, was 1.2 % under
    with it counted as gone)."""
    reads = {base(v) for v in u.reads}
    return not reads.isdisjoint(outside) or any(w is not u and w.grad and not reads.isdisjoint(w.saved)
                                                for w in units)


def _viewed_later(b: UnitBuilder, reads: list[Value], makes: list[Value]) -> list[Value]:
    """Of a step's segment's inputs ``reads``, those whose gradient exists as its backward starts
    as a view of a buffer others hold (:func:`_hands_view`: one later node alone reads it on).
    The segment's first gradient for it is summed into a new buffer. Random skip network 165's
    skip add, in the region's second segment, reads the Split's half the block's G add reads
    after the region, whose output a Concat reads: that sum lived through the segment's
    recompute (7 % under in checkpoint mode)."""
    ends = [b.position[m[0]] for m in makes if m[0] in b.position]
    if not ends:
        return []
    end = max(ends)
    found = []
    for v in reads:
        later = [r for r in b.readers.get(v, ()) if b.position.get(r, -1) > end]
        if len(later) == 1 and _hands_view(b, later[0]):
            found.append(v)
    return found


def _hands_view(b: UnitBuilder, r: str) -> bool:
    """Whether node ``r``, outside any region, hands what it reads a view of a buffer others
    hold: a Concat (slices of its output's gradient), or an add (the tensor it has) whose output
    one such node alone reads. An add whose output's gradient is a buffer of its own hands that
    to its operands, and the other's backward, run by then, has let go of it: the first sum is
    made in it (random skip network 326, whose G add a reversible region reads: 3 % over)."""
    if r in b.w.region_of:
        return False
    kind = b.w.report.nodes[r].type
    if kind == "Concat":
        return True
    if kind != "Merge" or r not in b.w.views or str(b.w.views[r].params.get("mode", "add")) != "add":
        return False
    outs = b.makes(r)
    readers = b.readers.get(outs[0], ()) if len(outs) == 1 else ()
    return len(readers) == 1 and _hands_view(b, readers[0])


def _parts(ns: Any, v: Value) -> Any:
    """The parts the runtime hands ``v`` on as (``Inline.unjoined``), found through the views
    ``v`` is of (a Repeat copy's output is its coupling node's joined one), else ``(v,)``."""
    found = ns.unjoined.get(v)
    if found is None:
        b = ns.base(v)
        found = ns.unjoined.get(b) if b is not None else None
    return found if found is not None else (v,)


def _reading_outside(u: Unit, base: Any, outside: AbstractSet[Any]) -> Unit:
    """``u``, or where the bytes of its price that are its input itself (``Unit.extra_fwd``)
    are an input the segment reads, ``u`` without them and with the work its backward then
    adds (``Unit.work_shared``)."""
    if u.extra_fwd is None or not any(base(v) in outside for v in u.reads):
        return u
    return replace(u, extra=u.extra_fwd, work_bwd=u.work_bwd + u.work_shared)


def _loss_only(b: UnitBuilder, v: Value) -> bool:
    """Whether ``v``'s gradient is only the loss's (an expanded scalar, no buffer): the step
    returns it (an Output reads it), or only adds and views hand it on to what the step returns
    (a skip Merge after a region: glow_flow with one around its flow was 5-9 % over in
    checkpoint mode, the region's last segment seeded with a buffer of its own)."""
    readers = b.readers.get(v, ())
    if not readers:
        return False
    infos, views = b.w.report.nodes, b.w.views
    for r in readers:
        kind = infos[r].type
        if kind == "Output":
            continue
        passes = kind in ("Reshape", "Flatten") or (
            kind == "Merge" and str(views[r].params.get("mode", "add")) == "add" if r in views else False)
        if not passes or not all(_loss_only(b, m) for m in b.makes(r)):
            return False
    return True


def _read_only_by(b: UnitBuilder, v: Value, kind: str) -> bool:
    """Whether only nodes of type ``kind`` read ``v`` (a value of ``b``'s graph): an Output (the
    step returns it), a GroupOutput (it leaves the body)."""
    found = b.readers.get(v, ())
    return bool(found) and all(b.w.report.nodes[r].type == kind for r in found)


def shared_outputs(b: UnitBuilder, makes: list[Value], leaving: bool = True, end: int | None = None) -> set[Value]:
    """Of a segment's outputs ``makes`` (values of ``b``'s graph), those whose gradient is a view
    of one other values have too: read only by adds or Concats (which hand the same gradient to
    each operand) or leaving a group body whose caller may (``leaving``: an AffineCoupling's
    net's caller makes a gradient of its own); it outlives the segment's backward. A value a
    layer reads too gets the sum of both gradients, a tensor of its own. ``end``: the segment's
    last node's place in ``b``'s order; an add or Concat whose other operands needing gradients
    are all made after it (by later segments, whose backward has run) leaves the gradient to
    this segment alone (a RevNet block's x1, which y1 = x1 + F(x2) reads: at batch 1 digits_revnet's
    checkpoint estimate was 4.9 % over with it counted until the end of the block's backward)."""
    out = set()
    infos, views = b.w.report.nodes, b.w.views
    shares = ("Concat", "GroupOutput") if leaving else ("Concat",)
    for v in makes:
        readers = _readers_through(b, v)
        if readers and all(infos[r].type in shares or (infos[r].type == "Merge" and str(
                views[r].params.get("mode", "add")) == "add") for r, _ in readers):
            if end is None or any(_holds_until(b, r, u, end) for r, u in readers):
                out.add(v)
    return out


def _readers_through(b: UnitBuilder, v: Value) -> list[tuple[str, Value]]:
    """The readers of ``v`` as (reader, the value it reads), through a Reshape or Flatten whose
    output leaves the body: the gradient the caller hands that output lives beyond the body's
    backward, the Reshape's of it (a view, or a copy the first layer it feeds lets go of) with it
    (a coupling node's G, a Linear reshaped back: random network 77's G segment was 1 % under at
    batch 32 with that gradient counted as gone)."""
    found: list[tuple[str, Value]] = []
    for r in b.readers.get(v, ()):
        outs = b.makes(r)
        if b.w.report.nodes[r].type in ("Reshape", "Flatten") and len(outs) == 1 and _read_only_by(
                b, outs[0], "GroupOutput"):
            found += [(n, outs[0]) for n in b.readers[outs[0]]]
        else:
            found.append((r, v))
    return found


def _holds_until(b: UnitBuilder, reader: str, v: Value, end: int) -> bool:
    """Whether ``reader`` (an add, Concat or GroupOutput) hands its gradient to an operand other
    than ``v`` that needs one and is made by a node at or before place ``end`` (or outside ``b``'s
    order): that operand's backward, still to come, keeps the shared gradient alive."""
    if b.w.report.nodes[reader].type == "GroupOutput":
        return True
    for u in b.reads(reader):
        if u != v and b.needs_grad(u) and b.position.get(u[0], -1) <= end:
            return True
    return False
