"""A reversible region's forward where an additive update cannot work in place, torch-free.

The runtime's forward (``runtime_function._RegionFunction``) updates a stream in place only
where the value is its own (``runtime_steps.Owned``). A flow layer with weights (an ActNorm,
an InvConv1x1: ``peak_bare.cast_flow``) hands on a result the runtime does not own, and a
Split of it gives views of that result; an additive coupling right after it (a coupling node,
or a wired block's Merges) then makes each half anew (``runtime_streams._two_sum`` for pairs:
seven temporaries of the half's size at once, two of them the new pair), while the flow's
output stays alive under the halves' views. That moment can be the step's peak.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from . import peak_bare
from .stream_updates import step_updates


def _update_bytes(elem: int, stream_bytes: int) -> tuple[int, int, int]:
    """(bytes per element of the temporaries alive at once, of the value it leaves, of a stream
    value the flow hands on) of an update made anew (not in place): a float32 pair's TwoSum on
    a value with no correction (seven float32 tensors, the pair among them; the flow's result
    is a pair whose correction takes no memory); a wider stream's ``f.to(stream) + y`` (the
    widened F output and the sum); a stream in the model's dtype, the sum alone."""
    if peak_bare._is_pairs(elem, stream_bytes):
        return 7 * elem, 2 * elem, elem
    if stream_bytes > elem:
        return 2 * stream_bytes, stream_bytes, stream_bytes
    return elem, elem, elem


def forward_updates(b: Any, steps: Sequence[str], couplings: Mapping[str, Any], stream: int) -> int:
    """The most a region's forward holds inside it (beyond its inputs) while an additive coupling
    right after a flow layer with weights makes the halves of the flow's output anew: the flow's
    output, the pairs already made, F's output and the update's temporaries; 0 where none does.
    ``steps``: the region's, in forward order; ``couplings``: its wired couplings by Merge;
    ``stream``: its outputs' bytes (the other streams alive beside the flow's output, as the
    region keeps its width). builtin_only (Conv, ActNorm, AdditiveCoupling, ActNorm) was 13 %
    under in reversible mode at batch 8 with forward priced as a step's outputs' worth."""
    temps, left, held = _update_bytes(b.elem, b.stream_bytes)
    batch = b.w.batch
    flow = made = 0  # the flow's output (bytes in the stream), the values made anew since
    most = 0
    for sid, kind in peak_bare.computing(b, steps):
        if peak_bare.cast_flow(kind):
            flow, made = b.largest_of([sid]) * held // b.elem, 0
            continue
        if peak_bare.rearranging(kind):  # (a view or move of what it read: still not the runtime's)
            continue
        if not flow or not (kind == "AdditiveCoupling" or sid in couplings):
            flow = 0
            continue
        for elements, _ in step_updates(b.w, sid, couplings.get(sid)):
            n = batch * elements
            others = max(0, stream * held // b.elem - flow)
            most = max(most, others + flow + made + n * b.elem + n * temps)
            made += n * left
        if kind == "AdditiveCoupling":  # its joined output is the runtime's own
            flow = 0
    return most


def shared_updates(b: Any, steps: Sequence[str], couplings: Mapping[str, Any], handed: AbstractSet[Any]) -> int:
    """The most a region's forward holds inside it while an additive update cannot work in place
    because its stream value is not dying: a wired coupling's that a later coupling of the region
    reads too (as its stream or its F's input), or an AdditiveCoupling node's input the region
    hands out (``handed``: its outputs). The update makes the new value anew
    (``runtime_steps.Coupling.run``: ``reuse``) and the runtime owns the value no more, so a later
    update of it is made anew as well. Held then: the streams with their corrections, the values
    made anew before, F's output and the update's temporaries; 0 where no update is so. Random
    skip network 361 (a skip add taking the place of a wired block's G, both adding to the block's
    first half): its forward was its peak, 4.8 / 5.3 % under at batches 8 / 32 priced as a step's
    outputs' worth; 385 (a skip reading the first of two coupling nodes' output) 3.0 / 1.5 % at 1 / 2."""
    temps, left, _ = _update_bytes(b.elem, b.stream_bytes)
    width = b.largest_of(steps) * b.stream_bytes // b.elem
    later = [couplings[sid] for sid in steps if sid in couplings]
    unowned: set[str] = set()
    made = most = 0
    for sid, kind in peak_bare.computing(b, steps):
        c = couplings.get(sid)
        if c is not None:
            later = later[1:]
            if c.a not in unowned and not any(c.a == d.a or c.a in d.b for d in later):
                continue
            unowned.add(c.a)
        elif kind == "AdditiveCoupling":
            src = b.w.source.get((sid, "in"))
            if src is None or (src.node, src.port) not in handed:
                continue
            made = 0  # (its own halves' pairs)
        else:
            continue
        for elements, _ in step_updates(b.w, sid, c):
            n = b.w.batch * elements
            most = max(most, width + made + n * b.elem + n * temps)
            made += n * left
    return most


def halves_anew(b: Any, values: Sequence[int], temps: Sequence[int]) -> list[int]:
    """What more each half's update holds (``values``: the halves' bytes, in forward order, F's
    then G's; ``temps``: the in-place update's temporaries the walk counts) where the coupling
    rebuilds them anew (:func:`unowned_rebuild`): backward runs G's first, so F's update holds
    G's new value beside its own temporaries, the out-of-place update's for the in-place one's."""
    per, left, _ = _update_bytes(b.elem, b.stream_bytes)
    extra = [v * per // b.elem - t for v, t in zip(values, temps)]
    if len(extra) == 2:
        extra[0] += values[1] * left // b.elem
    return extra


def wired_anew(b: Any, sid: str, anew: Sequence[str], couplings: Mapping[str, Any], value: int, temps: int) -> int:
    """What more wired coupling ``sid``'s update holds (``value``: the half's bytes, ``temps``:
    the in-place update's temporaries the walk counts) where its block rebuilds its halves anew
    (``anew``: ``peak_bare.unowned_rebuild``, forward order): the out-of-place update's
    temporaries, and the values the block's later couplings, which backward runs first, made."""
    if sid not in anew:
        return 0
    per, left, _ = _update_bytes(b.elem, b.stream_bytes)
    more = value * per // b.elem - temps
    for later in anew[anew.index(sid) + 1:]:
        more += sum(b.w.batch * elements * left for elements, _ in step_updates(b.w, later, couplings.get(later)))
    return more
