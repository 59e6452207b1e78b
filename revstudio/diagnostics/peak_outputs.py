"""A region's outputs that a step before its last makes, as its backward lets go of them.

A reversible region keeps each output (and its correction) from forward to backward. Its
backward rebuilds the streams from the last step's outputs; an output a later step of the region
took as its stream (a coupling's output a skip reads past the next block) stays kept only until
the rebuild gets it back: the runtime then has the stream itself and drops its kept pair, output
and correction, unless something else holds the storage (an Output node, a later layer's saved
tensors).
Torch-free.
"""
from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from ..core.graph import PortRef
from . import peak_bare, peak_steps


def mid_outputs_gone(b: Any, region: Any, named: Sequence[Any], owners: Sequence[str]) -> list[int]:
    """Per moment of ``region``'s backward (``owners``: the step each is of, in forward order):
    the bytes of the region's outputs ``named`` that a later step of the region takes as its
    stream (a Group, a coupling's update, a Concat: the step itself reads it, not a body) and
    that are gone by that moment (the moments of the steps before the first that takes it),
    each with its correction. A value the last steps only read (a wired block's y1, which G's
    body reads) is a stream to the end: it stays. Random skip network 13 (a coupling's output
    a skip add reads past the wired block after it) was 15.1 % over in reversible mode at batch
    1 with both kept pairs counted through the whole backward; measured, the coupling's pair
    goes once the block's inverse has rebuilt the coupling's output (torch 2.13, CPU)."""
    found = mid_outputs(b, region, named)
    if not found or not owners:
        return [0] * len(owners)
    steps = list(getattr(region, "steps", ()))
    position = {s: i for i, s in enumerate(steps)}
    gone = [(at, b.w.nbytes(v) + peak_bare.rebuilt_streams(b, [v], region)[0]) for at, v in found]
    return [sum(n for at, n in gone if position.get(sid, len(steps)) < at) for sid in owners]


def mid_corrections(b: Any, region: Any, named: Sequence[Any]) -> list[tuple[int, int]]:
    """(the position of the first step that takes it, the bytes of its correction) per region output
    of ``named`` that a later step takes as its stream (:func:`mid_outputs`): that correction is alive
    through the backward of that step and every step after it, so no step there may stand a
    missing correction of its own against it (``peak_steps._affine``'s ``bare``). Random skip
    network 265: an AffineCoupling before an ActNorm and an InvConv1x1 ending its region, whose
    Squeeze's output (a skip add reads it) keeps its pair through the coupling's rerun: 5.7 %
    under at batch 1 where its correction stood for the coupling's own missing one."""
    return [(at, peak_bare.rebuilt_streams(b, [v], region)[0]) for at, v in mid_outputs(b, region, named)]


def cloned_zeros(b: Any, region: Any, named: Sequence[Any], owners: Sequence[str]) -> list[int]:
    """Per moment of ``region``'s backward (``owners``: the step each is of): the bytes of the
    region outputs ``named`` that are a Split's part copied apart (``b.apart``, no correction kept)
    and the stream a wired coupling of the region updates. The coupling finds the part read on (it
    is handed out), so the runtime owns it no more and keeps its correction as zeros that take no
    memory; backward makes them real (``runtime_function``: cloned) beside the part's copy, which
    lives until that coupling has run backward. Priced at the moments before the region releases
    its outputs' gradients (``peak_units``' ``step[0]``); past the release the walk's count already
    holds it (skip network 31, whose G updates such a part, went 5.4 / 5.8 % over at batches 1 / 8
    counting it there too). Random skip network 313 (a wired block's first half a skip add reads,
    the region's one coupling): 5.9-6.7 % under at batches 1-32 without them."""
    couplings = getattr(region, "couplings", {}) or {}
    takers: dict[Any, str] = {}
    for sid, c in couplings.items():
        try:
            ref = PortRef.parse(c.a)
        except ValueError:
            continue
        takers.setdefault((ref.node, ref.port), sid)
    steps = list(getattr(region, "steps", ()))
    position = {s: i for i, s in enumerate(steps)}
    found = [(position[takers[v]], b.w.nbytes(v)) for v in dict.fromkeys(named)
             if v in takers and takers[v] in position and v in b.apart and not peak_bare.corrected(b, [v], region)]
    return [sum(n for at, n in found if position.get(sid, len(steps)) >= at) for sid in owners]


def made_real(b: Any, region: Any, owners: Sequence[str]) -> list[int]:
    """Per moment of ``region``'s backward (``owners``: the step each is of): the bytes of the
    stream's correction an additive step (a coupling node, a Repeat or Group of them, a wired
    block) made real whose output a flow layer rebuilt bare: its updates make the zeros real
    (``runtime_streams._pair_update``: ``zeros_like`` of each half at one sample, TwoSum's new
    pair from two), and that correction is the stream's through the steps backward runs next,
    up to a flow layer's inverse, which makes the pair anew with none (the step's own moments
    count it already: ``peak_steps._halves``), beyond the correction the region keeps (``kept_wide``,
    which the walk counts throughout and which stands for it: skip networks 160, 262, 384 and image
    network 47 went 4-7 % over counting both). Random skip network 178, an AdditiveCoupling between
    an AffineCoupling and an ActNorm, in a region ending with that ActNorm, which keeps no correction,
    was 16 KiB short at the affine coupling's rerun at batch 1 (1.8 % under); 330, a Repeat of
    coupling nodes before an ActNorm and an InvConv1x1, 2 KiB at the end. Not a step backward
    rebuilds anew (``peak_bare.unowned_rebuild``: before an InvConv1x1 that ends the region, from
    two samples), which makes each half's pair out of place and makes no zeros real: an ActNorm,
    a wired block and such an InvConv1x1 went 5.5 % over at batch 2 (``test_flow_forward_estimate``)."""
    known = getattr(b, "bare_known", None)
    if known is None:
        return [0] * len(owners)
    found = list(peak_bare.computing(b, list(getattr(region, "steps", ()))))
    at = {sid: i for i, (sid, _) in enumerate(found)}
    extra = [0] * len(found)
    for i, (sid, kind) in enumerate(found):
        if kind not in ("AdditiveCoupling", "Repeat", "Group", "Merge") or not (
                known.of(sid).bare or sid in known.bare_wired) or sid in known.anew:
            continue
        n = max(0, b.largest_of([sid]) - b.kept_wide)
        for j in range(i - 1, -1, -1):
            if peak_bare.cast_flow(found[j][1]):
                break
            extra[j] += n
    return [extra[at[sid]] if sid in at else 0 for sid in owners]


def bare_mids_gone(b: Any, region: Any, named: Sequence[Any], owners: Sequence[str]) -> list[int]:
    """Per moment of ``region``'s backward (``owners``: the step each is of): the bytes of the region
    outputs ``named`` a later step takes as its stream that come back bare (a flow layer's, the input
    only moved: :func:`not_streams` leaves them in the walk's count of the streams, standing for the
    zero correction backward makes real) and are gone by that moment, with that correction, once the
    rebuild has them back (the moments of the steps before the first that takes them). Random skip
    network 384 (an InvConv1x1's output a skip reads, the stream of the AffineCoupling after it) was
    5.9 / 6.9 % over at batches 1 / 2 counting that correction through the whole backward, 162 4.9 %
    at 1. Not where a flow layer takes the output (an ActNorm's an InvConv1x1 takes): skip 94 went
    5.3 % under at batch 1 with it gone there, 51 0.14 % (351 and 194, 1.9-3.0 % over, keep it)."""
    infos = b.w.report.nodes
    moved = peak_bare.moved_inputs(b.w, [region])
    steps = list(getattr(region, "steps", ()))

    def kind(nid: str) -> Any:
        return getattr(infos.get(nid), "type", None)

    found = [(at, b.w.nbytes(v)) for at, v in mid_outputs(b, region, named)
             if (v in moved or peak_bare.cast_flow(kind(v[0]))) and not peak_bare.cast_flow(kind(steps[at]))]
    if not found:
        return [0] * len(owners)
    position = {s: i for i, s in enumerate(getattr(region, "steps", ()))}
    return [sum(n for at, n in found if position.get(sid, len(position)) < at) for sid in owners]


def not_streams(b: Any, region: Any, named: Sequence[Any]) -> int:
    """Bytes of the region outputs ``named`` that a later step takes as its stream
    (:func:`mid_outputs`) and that come back with a correction of their own: the walk counts the
    streams' gradients as the outputs' bytes (``peak_units``' ``held``), but such an output is the
    streams at an earlier step, not one more: its gradient is summed into theirs. Random skip
    networks 46, 31 and 37 (a Concat's, a Split's part's, an AffineCoupling's output a skip add
    reads beside the region's last) were 11.6, 5.8 and 4.8 % over in reversible mode at batch 8,
    one stream's gradient too many at a coupling's rerun (measured, torch 2.13 CPU). Not an
    output that comes back bare (a flow layer's, the region's input only moved about): backward
    takes its expanded zero correction over as a real one (``runtime_function``: cloned), which
    that count stood for (random skip network 57, 7.7 % under without it; 94, 5.3 %; glow_flow
    with a skip from its Squeeze, 6.4 % at batch 2)."""
    infos = b.w.report.nodes
    moved = peak_bare.moved_inputs(b.w, [region])
    return sum(b.w.nbytes(v) for _, v in mid_outputs(b, region, named)
               if v not in moved and not peak_bare.cast_flow(getattr(infos.get(v[0]), "type", None)))


def mid_outputs(b: Any, region: Any, named: Sequence[Any]) -> list[tuple[int, Any]]:
    """The outputs of ``region`` (of ``named``) that a later step of the region takes as its
    stream, each once, with the position of the first step that takes it (``mid_outputs_gone``)."""
    steps = list(getattr(region, "steps", ()))
    if len(steps) < 2:
        return []
    position = {s: i for i, s in enumerate(steps)}
    held = {b.w.base(v) for v in b.held}
    nodes = set(getattr(region, "nodes", ()))
    found: list[tuple[int, Any]] = []
    seen = set()
    for v in named:
        base = b.w.base(v)
        if base is None or base in seen or base in held or _kept_outside(b, v, base, nodes):
            continue
        at = next((i for i, sid in enumerate(steps) if sid in b.position and v in b.reads(sid)), None)
        if at is None or at <= position.get(v[0], -1):
            continue
        seen.add(base)
        found.append((at, v))
    return found


def _kept_outside(b: Any, v: Any, base: Any, nodes: set[str]) -> bool:
    """Whether a node outside the region that reads ``v`` keeps its storage for backward."""
    for r in b.readers.get(v, ()):
        if r in nodes or r not in b.w.saves:
            continue
        if base in {b.w.base(s) for s in b.w.saved_values(r)}:
            return True
    return False


def grads_read_on(b: Any, region: Any, named: Sequence[Any]) -> frozenset[Any]:
    """The outputs of ``region`` (of ``named``) a later step takes as its stream before the steps
    backward runs ahead of the release of the outputs' gradients (``peak_steps.spent_after``):
    backward reads such an output's gradient on, past that release, until it reaches the step that
    takes it (``Unit.grads_read_on``). Random skip network 31: the first wired block's Split part the
    skip add reads, which that block's G update takes (5.4 / 5.8 % under at batches 1 / 8 counting its
    gradient gone with the others' once the add's gradient is priced as the buffer it is)."""
    steps = list(getattr(region, "steps", ()))
    spent, ran, cut = peak_steps.spent_after(b, region), 0, 0
    for i in reversed(range(len(steps))):  # (the position of the last step run before the release)
        view = b.w.views.get(steps[i])
        if view is None or view.type in peak_steps.VIEWING:
            continue
        ran += int(view.params.get("times", 1)) if view.type == "Repeat" else 1
        if ran >= spent:
            cut = i
            break
    return frozenset(v for at, v in mid_outputs(b, region, named) if at < cut)


def unread_outputs(b: Any, region: Any, named: Sequence[Any], makes: Sequence[Any]) -> tuple[Any, ...]:
    """The outputs of ``region`` (of ``named``) made by its steps that nothing after it
    differentiates: a wired block's Split part that a skip add took the place of is a stream the
    region hands out, read by no one. Autograd hands the region's backward a gradient of zeros for
    each (materialised, the output's bytes), which no reader's backward made (``Unit.zero_grads``).
    Random skip networks 112 and 341 were 6.6 and 2.9 % under in reversible mode at batch 1 without
    it. Not a value a budget's rest hands back that the kept steps before it made (its input, or a
    part of it, moved about): skip 77 and 31 under a 64 KiB budget at batch 8 went 11-13 % over
    counting those."""
    nodes = set(getattr(region, "nodes", ()))
    return tuple(v for v in dict.fromkeys(named) if v not in makes and v[0] in nodes and b.needs_grad(v))


def unread_kept(b: Any, nodes: AbstractSet[str], reads: Sequence[Any], zeros: Sequence[Any],
                makes: Sequence[Any]) -> list[Any]:
    """Of the outputs ``zeros`` (:func:`unread_outputs`), those the region keeps as a storage the
    walk holds nowhere: a part of a storage made inside the region, whose other outputs do not
    hold it, or of one of its inputs ``reads`` (the runtime's stream is a copy of the caller's) is
    an output of its own (the forward's stream, in the model's dtype) that the region keeps to
    backward beside its correction; backward copies it to rebuild in, in its place. Random skip
    networks 112 (a Split part of a coupling's output) and 341 (of the region's input) kept 8,192
    and 1,024 B more at batch 1, measured, than the walk held."""
    held = {b.w.base(v) for v in makes}
    inputs = {b.w.base(v) for v in reads}
    found = []
    for v in zeros:
        base = b.w.base(v)
        if base is not None and (base[0] in nodes or base in inputs) and base not in held:
            found.append(v)
    return found


def zeros_gone(b: Any, region: Any, zeros: Sequence[Any], kept: Sequence[Any], owners: Sequence[str]) -> list[int]:
    """Per moment of ``region``'s backward (``owners``: the step each is of): the bytes of the
    gradients of zeros of ``zeros`` (:func:`unread_outputs`) and of the outputs ``kept``
    (:func:`unread_kept`) that are gone by then. Such a gradient is its stream's until the backward
    of the last step that reads the stream (a coupling's F) sums a gradient into it anew, and goes
    then, past the release of the outputs' others (random skip network 341's peak at ac3, the ninth
    of fifteen steps, holds it; 314's, after the skip add's coupling has run, does not). Such an
    output (the copy backward rebuilds in) is a stream until the step that made it joins it back
    (a Split gathering its parts): random skip network 361's peak at batch 1, its first step's
    moment, holds neither (8.4 % over counting both on)."""
    steps = list(getattr(region, "steps", ()))
    position = {s: i for i, s in enumerate(steps)}
    couplings = getattr(region, "couplings", {}) or {}
    gone = []
    for v in zeros:
        readers = [i for i, sid in enumerate(steps) if v in b.reads(sid)
                   or any(v in b.reads(n) for n in getattr(couplings.get(sid), "body", ()))]
        if readers:
            gone.append((max(readers), b.w.nbytes(v)))
    gone += [(position[v[0]], b.w.nbytes(v)) for v in kept if v[0] in position]
    return [sum(n for at, n in gone if position.get(sid, len(steps)) < at) for sid in owners]


def logdet_bytes(b: Any, region: Any) -> int:
    """Bytes of a flow region's per-sample log-determinant sums (one float a sample each) that
    live to its backward: each AffineCoupling step's own (``module.logdet``, kept to the next
    forward), the region's log-determinant output (a clone), and the gradient autograd hands
    back for it (zeros, where the loss does not read it; read by every flow step). Skip network
    25 under a 64 KiB budget at batch 8 was 0.12 % under, 341 at 8 0.09 %, without them."""
    types = [getattr(b.w.views.get(sid), "type", None) for sid in getattr(region, "steps", ())]
    if not any(t in ("AffineCoupling", "ActNorm", "InvConv1x1") for t in types):
        return 0
    return int(b.w.batch) * int(b.elem) * (types.count("AffineCoupling") + 2)



def handed_back(region: Any, named: Sequence[Any], reads: Sequence[Any]) -> list[Any]:
    """The outputs ``named`` a budget's rest hands back untouched that the kept steps before it
    made (``region.head``; a value a later layer reads that no step of the rest reads). The runtime
    takes each in as an input of the rest: a stream copy of its own, which it hands out and copies
    again in backward, with an inversion-error sample. The copy takes the place of the kept step's
    storage the walk holds unless a kept step saved that storage (``estimate_units._keeping``
    counts it there); the sample is the rest's own. Random skip network 65 under a 64 KiB budget
    at batch 1 (an ActNorm's output a skip add reads past the region, which the InvConv1x1 after
    it saves) was 8.2 % under without both, 51 at batch 8 (whose InvConv1x1 saves a copy of it) 1.2 %
    without the sample."""
    head: AbstractSet[str] = getattr(region, "head", frozenset())
    read = set(reads)
    return [v for v in dict.fromkeys(named) if v[0] in head and v not in read]
