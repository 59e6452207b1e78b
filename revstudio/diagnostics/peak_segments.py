"""Checkpoint mode's units of the peak walk (``peak.simulate``): a run of ordinary layers
checkpointed as one segment, and the segments of a region, whose cuts may fall between the
copies of a Repeat. Built from a ``peak_units.UnitBuilder``'s facts; each recompute is walked
by a ``peak_inline.Inline``. Torch-free.
"""
from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from .peak import Unit, Value
from .peak_recompute import shared_outputs
from .peak_units import UnitBuilder
from .save_rules import between_bytes


def segment(b: UnitBuilder, name: str, nodes: list[str], inline: Any,
            seed_bytes: Mapping[Value, int] | None = None, elsewhere: AbstractSet[Value] = frozenset(),
            crossing: tuple[list[Value], list[Value]] | None = None, pins: dict[Value, int] | None = None) -> Unit:
    """Checkpoint mode: a segment (a run of layers, or of a region's steps) keeps its inputs.
    torch.utils.checkpoint recomputes it when backward reaches it and runs its backward as
    standard mode does: ``inline`` (a ``peak_inline.Inline`` of ``b``) walks that recompute
    alone, layer by layer (``peak_recompute``: its inputs kept outside, its outputs' gradients
    seeded; ``seed_bytes``: those that are larger buffers, as the next segment hands them back;
    ``elsewhere``: storages other segments keep as their inputs, :func:`_pinned`; ``crossing``:
    ``b.outside`` of ``nodes``, where the caller has it; ``pins``: see :func:`_pinned`)."""
    reads, makes = b.outside(set(nodes)) if crossing is None else crossing
    saved = _kept(inline, reads)
    params = sum(int(b.w.report.nodes[n].parameters) for n in nodes) * b.elem
    order = sorted(nodes, key=b.position.__getitem__)
    layers = [u for n in order for u in inline.units(n)]
    return inline.recompute(name, layers, reads, makes, shared_outputs(b, makes, end=b.position[order[-1]]), saved,
                            _pinned(b, inline, reads, elsewhere, pins), params, any(b.needs_grad(v) for v in makes),
                            seed_bytes, top=True)


def _pinned(b: UnitBuilder, inline: Any, reads: list[Value], elsewhere: AbstractSet[Value] = frozenset(),
            pins: dict[Value, int] | None = None) -> int:
    """What a segment keeps of its inputs beyond their bytes: an input its first step reads
    unjoined (a coupling node's output the next one's slice undoes: ``Inline.unjoined``) is kept
    as its parts, and a part that is a view (a coupling's x1, which passes through) keeps the
    whole storage it was sliced from. Random network 50 at batch 8: an AffineCoupling after an
    InvConv1x1 hands on x1, a view of the InvConv1x1's output, and the segment after the cut
    kept 96 KiB for a 64 KiB input (4.5 % under without it). A part whose storage the region
    does not make (a view of the region's input, which its first segment keeps anyway) adds
    nothing, so the value can come to less than its bytes: random network 139's couplings hand
    on x1, a view of the stem's output, and the cut kept y2 alone (15.6 % over when the value
    was counted whole, and that storage again). Nor does a storage another segment of the region
    keeps as its input (``elsewhere``): random network 700's AffineCoupling node hands a wired
    block in the next segment x1, a view of the Squeeze output the segment before keeps (0.9 %
    over at batch 32, the segment's backward 65 KiB over). (Call once ``inline`` has walked the
    segment's layers: that finds which inputs are read unjoined.) With ``pins`` (a region's
    segments), those bytes go there per input instead, for the walk to count with the input itself
    from the segment that makes it on: the storage is alive from then, through that segment's
    backward too (skip networks 94 and 65, an AffineCoupling on an InvConv1x1's output before the
    cut: 3-5 % under in checkpoint mode with x1's storage counted during the later recompute alone)."""
    counted = {inline.base(v) for v in reads if v not in inline.unjoined}
    region_of, nodes = b.w.region_of, b.w.report.nodes
    more = 0
    for v in reads:
        parts = inline.unjoined.get(v)
        if parts is None:
            continue
        here = region_of.get(v[0])
        # (a storage of a graph node outside the region; a body's, inside a Group or Repeat of
        # the region, has a scoped name no graph node has)
        storages = {s for s in (inline.base(p) for p in parts) if s is not None and s not in counted
                    and s not in elsewhere and not (s[0] in nodes and region_of.get(s[0]) != here)}
        counted |= storages
        held = sum(inline.nbytes(s) for s in storages) - b.w.nbytes(v)
        if pins is None:
            more += held
        else:
            pins[v] = held
    return more


def _kept(inline: Any, reads: Any) -> set[Value]:
    """The storages of a segment's inputs, which it keeps (as the walk's namespace resolves them:
    the parts of a joined value a Split hands on unjoined, not the joined value)."""
    return {base for base in (inline.base(v) for v in reads) if base is not None}


def _link(b: UnitBuilder, nid: str, copy: int) -> Value:
    """The values copy ``copy - 1`` of Repeat ``nid`` hands copy ``copy``, as one value."""
    v = (nid, f"#{copy}")
    b.w.define(v, b.w.repeat_link_bytes(nid))
    b.rg[v] = any(b.needs_grad(m) for m in b.makes(nid))
    return v

def pieces(b: UnitBuilder, name: str, members: list[tuple[str, int, int, int]], inline: Any,
           seed_bytes: Mapping[Value, int] | None = None, elsewhere: AbstractSet[Value] = frozenset(),
           crossing: tuple[list[Value], list[Value]] | None = None, pins: dict[Value, int] | None = None) -> Unit:
    """A checkpoint segment of a region whose cuts may fall between the copies of a Repeat:
    ``members`` are (node, first copy, end copy, copies); a part of a Repeat reads and makes
    the values between its copies, and its recompute walks those copies' layers (where the
    Repeat is not walked as its copies: its share of the Repeat's work). ``seed_bytes``: as
    :func:`segment`'s, and ``elsewhere``, ``crossing`` and ``pins``."""
    partial = {nid: (lo, hi, n) for nid, lo, hi, n in members if n > 1 and (lo, hi) != (0, n)}
    nodes = [m[0] for m in members]
    if not partial:
        return segment(b, name, nodes, inline, seed_bytes, elsewhere, crossing, pins)
    inside = set(nodes)
    reads: dict[Value, None] = {}
    makes: dict[Value, None] = {}
    for nid in nodes:
        lo, hi, n = partial.get(nid, (0, 1, 1))
        if lo > 0:
            reads[_link(b, nid, lo)] = None
        else:
            reads.update((v, None) for v in b.reads(nid) if v[0] not in inside)
        if hi < n:
            makes[_link(b, nid, hi)] = None
        else:
            makes.update((v, None) for v in b.makes(nid)
                         if any(r not in inside for r in b.readers.get(v, ())))
    saved = {base for base in (b.w.base(v) for v in reads) if base is not None}
    found = inline.piece_units(members)
    if found is not None:  # the recompute walked layer by layer, as ``segment`` does
        layers, ends = found
        params = sum(u.params for u in layers)
        # (its outputs as its layers make them: a copy's, not the link between the copies)
        outs = [v for v in makes if v[1][:1] != "#" or v[0] not in partial] + ends
        end = max(b.position[n] for n in nodes)
        unit = inline.recompute(name, layers, list(reads), outs, shared_outputs(b, outs, end=end),
                                _kept(inline, reads), _pinned(b, inline, list(reads), elsewhere, pins), params,
                                any(b.needs_grad(v) for v in makes), seed_bytes, top=True)
        unit.makes = list(makes)  # (the walk's outputs are the copies'; the step's, the links between them)
        return unit
    whole = [n for n in nodes if n not in partial]
    params = sum(int(b.w.report.nodes[n].parameters) for n in whole) * b.elem
    recompute = b.recompute_bytes(whole, saved)
    for nid, (lo, hi, n) in partial.items():
        share = (hi - lo) / n
        params += int(int(b.w.report.nodes[nid].parameters) * b.elem * share)  # its copies' weights
        # its share of what the copies keep inside; what the Repeat keeps of its own input
        # only the first copy recomputes
        values, extra = b.saved_by(nid)
        body = b.w.views[nid].bodies.get("group") if nid in b.w.views else None
        if body is not None:  # the copies' insides, and what passes between the copies inside
            between = between_bytes(body, b.w.batch, b.elem)
            recompute += body.internal_bytes * (hi - lo) + between * (hi - lo - 1)
        else:
            recompute += int(extra * share)
        if lo == 0:
            recompute += sum(b.w.nbytes(v) for v in values - saved)
    act = b.largest_of(nodes)
    return Unit(name, list(reads), list(makes), saved, 0, params, True, 2 * act,
                recompute + act + max(max(b.node_work(n) for n in nodes), 0),
                any(b.needs_grad(v) for v in makes), late=True)
