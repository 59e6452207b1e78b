"""Which of a region's streams backward rebuilds without a correction of their own, in
compensated pairs (``runtime_streams.Pair``): a flow layer with weights computes in float32 and
hands back pairs whose correction is an expanded zero that takes no memory, and the steps before
it rebuild from those (``peak_units.UnitBuilder._moments`` prices the difference). Also which
halves of a coupling are views of one storage. Torch-free.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from ..core.graph import PortRef
from ..core.spec import NodeSpec, registry
from .estimate_walk import _prod
from .peak_unowned import plugin_rebuilt, unowned_rebuild
from .save_rules import coupling_split
from .stream_updates import update_temporaries

# steps the runtime builds of its own (a region's couplings, spliced groups, slices and joins)
_STRUCTURED = frozenset({"AdditiveCoupling", "AffineCoupling", "Group", "Repeat", "Split", "Concat"})


def cast_flow(kind: str | None) -> bool:
    """Whether a step of type ``kind`` is an invertible layer that computes (an ActNorm, an
    InvConv1x1, a plugin's invertible leaky ReLU: not ``NodeSpec.layout_only``): in a pair
    region it computes in float32, and its results (and what its inverse rebuilds) are pairs
    with no correction (``runtime_streams.like``, ``runtime_steps.Invertible``'s ``cast``)."""
    spec = _spec(kind)
    return spec is not None and spec.invertible and not spec.layout_only


def rearranging(kind: str | None) -> bool:
    """Whether a step of type ``kind`` is an invertible layer that only moves values around (a
    Squeeze, Permute, Reshape or Flatten: ``NodeSpec.layout_only``): in a pair region it
    rearranges hi and lo alike, and a correction of zeros that takes no memory stays one."""
    spec = _spec(kind)
    return spec is not None and spec.invertible and spec.layout_only


def _spec(kind: str | None) -> NodeSpec | None:
    return None if kind is None or kind in _STRUCTURED else registry.find(kind)


def _never(kind: str) -> bool:
    return False


def _pairs(b: Any) -> bool:
    """Whether builder ``b`` prices a float32 model's compensated pair streams (:func:`_is_pairs`)."""
    return _is_pairs(b.elem, b.stream_bytes)


def residual_bytes(elem: int, stream_bytes: int) -> int:
    """Bytes a region keeps per value of a wide stream beside the value it hands out: the rounding
    residual, in the model's dtype (``runtime_function``: a float32 pair's low half; a float64
    stream's remainder cast to a bfloat16 or float16 model's dtype, 2 bytes, not 6)."""
    return max(0, min(stream_bytes, 2 * elem) - elem)


def rebuilt_streams(b: Any, named: Sequence[Any], region: Any) -> tuple[int, int, int]:
    """(kept, grown, temporaries) of a region's outputs ``named`` with a correction
    (:func:`corrected`): the residuals it keeps (:func:`residual_bytes`); what backward holds more
    than a float32 pair's copy and residual where the streams are float64 tensors of a narrower
    model (``runtime_function``: each a new float64 copy of the output, not the pair that takes
    the residual over); and the temporaries of the first one's update with its residual, widened
    a piece at a time (``stream_updates.update_temporaries``). Counted as pairs, a bfloat16
    revnet_wired was 17 % under in reversible mode at batch 1 and 19 % over at batch 8."""
    total = corrected(b, named, region)
    kept = total * residual_bytes(b.elem, b.stream_bytes) // b.elem
    grown = total * b.stream_bytes // b.elem - total - kept
    if grown <= 0:
        return kept, 0, 0
    largest = max((b.w.nbytes(v) for v in named), default=0) // max(1, b.w.batch) // b.elem
    return kept, grown, update_temporaries(b.w.batch, largest, b.elem, b.stream_bytes, False, b.device)


def _is_pairs(elem: int, stream_bytes: int) -> bool:
    """Whether a model of ``elem``-byte values has compensated pair streams (a float32 model's;
    float64 streams of a narrower model get a float64 result from a flow layer, no separate
    correction)."""
    return elem == 4 and stream_bytes == 8


def corrected(b: Any, outs: Sequence[Any], region: Any = None) -> int:
    """Bytes of the region outputs ``outs`` (as named: a Split's parts) whose streams carry a
    correction the region keeps, as the storages they are views of tell (:func:`with_correction`)."""
    moved = moved_inputs(b.w, [region]) if region is not None else frozenset()
    bases = [b.w.base(v) for v in outs]
    kept = set(with_correction(b.w.report.nodes, b.elem, b.stream_bytes, bases, moved))
    total = sum(b.w.nbytes(v) for v, base in zip(outs, bases) if base is not None and base in kept)
    return total + (_zeros_beyond(b, outs, bases, owned_parts(b, region, outs)) if moved else 0)


def _zeros_beyond(b: Any, outs: Sequence[Any], bases: Sequence[Any], zeros: AbstractSet[Any]) -> int:
    """Bytes of the zeros residuals of ``zeros`` (:func:`owned_parts`) not counted yet: the walk
    keeps the storage a Split's parts are views of whole, the runtime the parts' copies, so parts
    no output names leave room for them (skip networks 14 and 15 were 2.0 and 6.5 % over without)."""
    more = 0
    for base in {bs for v, bs in zip(outs, bases) if v in zeros and bs is not None}:  # (None: an unwired Split)
        parts = {v for v, bs in zip(outs, bases) if bs == base}
        # (no room where the parts are copies apart, counted as themselves)
        room = 0 if parts & b.apart else b.w.nbytes(base) - sum(b.w.nbytes(v) for v in parts)
        more += max(0, sum(b.w.nbytes(v) for v in parts if v in zeros) - room)
    return more


def owned_parts(b: Any, region: Any, outs: Sequence[Any]) -> set[Any]:
    """The region outputs ``outs`` (as named) that are parts of a Split of its input, copied apart
    (:func:`halves_viewed`), that no step of the region consumes (F's layers may read them): the
    runtime's own with no correction, kept with real zeros as their residual (``runtime_function``;
    an input only moved keeps none: :func:`moved_inputs`). Skip network 52 (x2 an output) was 4.9 %
    under in reversible mode at batch 8."""
    if region is None or not _pairs(b):
        return set()
    steps = [s for s in getattr(region, "steps", ()) if s in b.w.views]
    inputs = {(p.node, p.port) for p in map(PortRef.parse, getattr(region, "inputs", ()))}
    consumed = {(p.node, p.port) for p in (b.w.source.get((sid, port)) for sid in steps for port in b.w.views[sid].inputs)
                if p is not None}
    found = set()
    for v in outs:
        view = b.w.views.get(v[0])
        if view is None or view.type != "Split" or v[0] not in steps or v in consumed:
            continue
        shape = view.inputs.get("in") or ()
        src = b.w.source.get((v[0], "in"))
        if src is not None and (src.node, src.port) in inputs and shape and not halves_viewed(b, b.w.batch, shape):
            found.add(v)
    return found


def moved_inputs(w: Any, regions: Iterable[Any]) -> set[Any]:
    """The values of ``regions`` that are one of its inputs moved about by its layout-only steps
    alone (a Squeeze of the image the region starts with): the caller's tensor rearranged, whose
    stream's correction is the input's, zeros that take no memory, and stays so as a region
    output (``runtime_function``: the residual kept is the stream's own). glow_flow with a
    skip Merge reading its Squeeze's output was 7 % over in reversible mode, that output counted
    with a correction."""
    found: set[Any] = set()
    for region in regions:
        free = set(getattr(region, "free", ()) or ())
        moved = {(p.node, p.port) for p in map(PortRef.parse, getattr(region, "inputs", ())) if str(p) not in free}
        for sid in getattr(region, "steps", ()):
            info = w.report.nodes.get(sid)
            if info is None or not rearranging(info.type):
                continue
            reads = [(src.node, src.port) for src in (w.source.get((sid, port)) for port in info.inputs) if src]
            if reads and all(v in moved for v in reads):
                moved.update((sid, port) for port in info.outputs)
        found |= moved
    return found


def with_correction(infos: Mapping[str, Any], elem: int, stream_bytes: int, outs: Iterable[Any],
                    moved: AbstractSet[Any] = frozenset()) -> list[Any]:
    """Of region outputs ``outs``, those whose streams carry a correction the region keeps: in
    pairs (a float32 model's, ``stream_bytes`` 8), not those a flow layer with weights makes (a
    pair with no correction: zeros that take no memory, ``runtime_streams.like``), nor an input
    only ``moved`` (:func:`moved_inputs`)."""
    pairs = _is_pairs(elem, stream_bytes)
    return [v for v in outs if v is not None
            and not (pairs and (v in moved or (v[0] in infos and cast_flow(infos[v[0]].type))))]


def _typed(b: Any, steps: Sequence[str]) -> list[tuple[str, str]]:
    """(step, its type) of the steps of ``steps`` builder ``b`` has a view of."""
    views = b.w.views
    return [(sid, views[sid].type) for sid in steps if sid in views]


def computing(b: Any, steps: Sequence[str], skip: Callable[[str], bool] = _never) -> Iterator[tuple[str, str]]:
    """(step, its type) of the steps of ``steps`` that compute (not a Split or Concat, nor of a
    type ``skip`` says)."""
    for sid, kind in _typed(b, steps):
        if kind not in ("Split", "Concat") and not skip(kind):
            yield sid, kind


def _after_block(found: Sequence[tuple[str, str]], at: int, after: str | None,
                 skip: Callable[[str], bool] = _never) -> tuple[int | None, str | None]:
    """For the wired coupling at ``found[at]`` (steps and their types): (where its block's Concat
    is in ``found``, if it has one, and the type of the step after it: its own other couplings
    and its Concat, then types in ``skip``, passed over; ``after`` past the region's end)."""
    concat = None
    for i in range(at + 1, len(found)):
        kind = found[i][1]
        if kind == "Merge" and concat is None:  # (its own block's other coupling)
            continue
        if kind == "Concat" and concat is None:  # its block's end
            concat = i
            continue
        if skip(kind):
            continue
        return concat, kind
    return concat, after


# what follows a region's last step (a spliced body's next copy's first): the type of the next step
# that computes, and of the next that is no rearranging layer (None: the region's end)
After = tuple[str | None, str | None]
NOTHING_AFTER: After = (None, None)


def after_each(b: Any, steps: Sequence[str], after: After = NOTHING_AFTER) -> dict[str, After]:
    """For each step of a region that computes, what follows it (:data:`After`); ``after``:
    what follows the region's last step."""
    far = next_types(b, steps, after[1], rearranging)
    return {sid: (kind, far.get(sid)) for sid, kind in next_types(b, steps, after[0]).items()}


def first_after(b: Any, steps: Sequence[str], after: After = NOTHING_AFTER) -> After:
    """What follows a step that ``steps`` (a region's, in forward order) come right after: their
    first computing step's type and their first not rearranging, else ``after``'s."""
    near = next((kind for _, kind in computing(b, steps)), None)
    far = next((kind for _, kind in computing(b, steps, rearranging)), None)
    return (after[0] if near is None else near, after[1] if far is None else far)


def next_types(b: Any, steps: Sequence[str], after: str | None = None,
               skip: Callable[[str], bool] = _never) -> dict[str, str | None]:
    """For each step of a region that computes (in forward order), the type of the next one that
    does (steps of a type ``skip`` says passed over); ``after``: the type of the step after the
    last (None: the region's end)."""
    found = list(computing(b, steps, skip))
    return {sid: nxt for (sid, _), nxt in zip(found, [kind for _, kind in found[1:]] + [after])}


def bare_streams(b: Any, steps: Sequence[str], after: str | None = None) -> set[str]:
    """The steps of a region whose output backward rebuilds with no correction: a flow layer
    with weights rebuilds it, directly or through layers that only rearrange it (a Squeeze
    between Glow steps); none but in pairs (:func:`uncorrected`: the directly followed).
    ``after``: the type of the first step after the region's end that is no rearranging layer
    (``After``'s second)."""
    return uncorrected(b, next_types(b, steps, after, rearranging))


def bare_x1(b: Any, steps: Sequence[str], bare: AbstractSet[str]) -> dict[str, int]:
    """The steps of a region (AffineCoupling steps, in pairs) whose output backward rebuilds with
    part of its correction missing, and those bytes: an AffineCoupling hands the step before it
    its x1 as it got its y1, and where that came back with no correction (:func:`bare_streams`,
    or again through such a chain) the x1 half still has none; x2 it rebuilds as a new pair,
    corrected. Where the halves are views of one storage (:func:`halves_viewed`), the
    storage's dead y2 part takes the correction's place (:func:`bare_x1_viewed`). Random network
    94 (two AffineCouplings before an ActNorm) was 3.2 % over at batch 8 without it."""
    return _x1_chain(b, steps, bare, viewed=False)


def bare_x1_viewed(b: Any, steps: Sequence[str], bare: AbstractSet[str]) -> set[str]:
    """:func:`bare_x1` at one sample, where the halves are views of one storage: the AffineCoupling
    steps the next one hands their x1 as it got its y1, with no correction. x1 is then a view of a
    storage whose correction is an expanded zero: the dead y2 part x1 keeps is hi only, and takes
    the place of x1's missing correction, which the region counts (random networks 838 and 981,
    two AffineCouplings before an ActNorm, were 1.9 and 3.2 % over at batch 1 counting the part
    whole, 981 still 1.5 % counting its hi)."""
    return set(_x1_chain(b, steps, bare, viewed=True))


def _x1_chain(b: Any, steps: Sequence[str], bare: AbstractSet[str], viewed: bool) -> dict[str, int]:
    """The steps an AffineCoupling whose halves are (``viewed``) or are not views of one storage
    hands x1 with no correction (bare itself, or again through such a chain), and the bytes of
    that x1's missing correction; none but in pairs."""
    if not _pairs(b):
        return {}
    out: dict[str, int] = {}
    carry = 0
    for sid, kind in reversed(list(computing(b, steps))):
        if carry and sid not in bare:
            out[sid] = carry
        view = b.w.views[sid]
        shape = view.inputs.get("in")
        if kind == "AffineCoupling" and (sid in bare or sid in out) and shape \
                and halves_viewed(b, view.batch, shape) == viewed:
            c1, _ = coupling_split(view.params, shape)
            carry = view.batch * c1 * _prod(shape[1:]) * (b.stream_bytes - b.elem)
        else:
            carry = 0
    return out


def bare_wired(b: Any, steps: Sequence[str], couplings: Mapping[str, Any], after: str | None = None) -> set[str]:
    """The wired couplings of a region (``couplings``, by their Merge) whose block's output
    backward rebuilds with no correction (:func:`bare_streams`, and ``after`` as there): a flow
    layer with weights follows the block, its own other couplings, its Concat and rearranging
    layers passed over
    (another wired block in between rebuilds it corrected: random networks 34 and 264 were up to
    0.45 % over at batch 1 with every Merge passed over). Both halves of the joined output come
    back bare, and each coupling's rebuild gives the input it rebuilds a correction of its own
    (random network 72's wired block before an ActNorm at batch 2: 2.1 % under without it)."""
    if not couplings or not _pairs(b):
        return set()
    found = _typed(b, steps)
    return {sid for i, (sid, _) in enumerate(found)
            if sid in couplings and cast_flow(_after_block(found, i, after, rearranging)[1])}


def flow_joined(b: Any, steps: Sequence[str], couplings: Mapping[str, Any], after: str | None = None
                ) -> dict[str, str]:
    """The first coupling (Merge) of each wired block of a region that a flow layer with weights
    directly follows, and the block's Concat. The flow's backward hands the block its output's
    gradient as one new tensor; the block's second coupling sums its G's gradient of y1 into a
    view of it, a new tensor beside it, when the first rebuilds its input (random network 283,
    wired in a Group before an ActNorm, was 0.9 % under at batch 1 without it)."""
    if not couplings or not _pairs(b):
        return {}
    found = _typed(b, steps)
    out: dict[str, str] = {}
    end = -1  # where the Concat of the block seen last is
    for i, (sid, _) in enumerate(found):
        if sid not in couplings or i < end:
            continue
        concat, nxt = _after_block(found, i, after)
        if concat is not None:
            end = concat
            if cast_flow(nxt):
                out[sid] = found[concat][0]
    return out


def split_corrections(b: Any, steps: Sequence[str], couplings: Mapping[str, Any], bare: AbstractSet[str],
                      wired_bare: AbstractSet[str]) -> set[str]:
    """The AffineCoupling steps of a region whose output's halves backward hands back with
    corrections of their own, not views of one: additive couplings follow (wired or nodes, or a
    Group or Repeat of only those, spliced in: random network 819's Repeat of wired blocks, 2.2 %
    over at batch 1 without it; a Concat and Split between them are elided), and the last of them
    rebuilds bare streams
    (``bare``: :func:`bare_streams`; ``wired_bare``: :func:`bare_wired`), so each half's first
    update made it a correction of its own, and the halves' values stay views of one storage
    only in hi. Random networks 158, 192 and 227 at batch 1 were 1.4-1.8 % over with y2's dead
    part counted in both (``_viewed_y2``)."""
    if not _pairs(b):
        return set()
    found = list(computing(b, steps))
    out = set()
    for i, (sid, kind) in enumerate(found):
        if kind != "AffineCoupling":
            continue
        chain = []
        for nid, nxt in found[i + 1:]:
            if nxt == "AdditiveCoupling" or nid in couplings or _additive_body(b, nid):
                chain.append(nid)
            else:
                break
        if chain and (chain[-1] in bare or chain[-1] in wired_bare):
            out.add(sid)
    return out


def _additive_body(b: Any, sid: str) -> bool:
    """Whether step ``sid`` is a Group or Repeat whose body, spliced into the region, is additive
    couplings only (wired or nodes)."""
    inner = b.spliced(sid)
    if inner is None:
        return False
    sub, body, _ = inner
    couplings = getattr(body, "couplings", {}) or {}
    found = list(computing(sub, getattr(body, "steps", ())))
    return bool(found) and all(kind == "AdditiveCoupling" or nid in couplings for nid, kind in found)


def uncorrected(b: Any, nexts: dict[str, str | None]) -> set[str]:
    """The steps of a region whose output the next step, a flow layer with weights, rebuilds in
    backward as a pair with no correction (zeros that take no memory); none but in pairs."""
    return {sid for sid, kind in nexts.items() if cast_flow(kind)} if _pairs(b) else set()


def x1_summed_anew(nexts: dict[str, str | None]) -> set[str]:
    """The AffineCoupling steps of a region whose x1 gradient from their net is summed into a
    new buffer (``runtime_steps._accumulate``): x1's gradient there is one handed on as it came,
    not a sum the runtime owns, where the region's last step gets its output's (views of what
    autograd hands the region) and where a flow or rearranging layer's backward made it. An
    additive step or AffineCoupling after it has summed into x1's gradient already, and the sum
    is made in place."""
    return {sid for sid, kind in nexts.items() if kind is None or cast_flow(kind) or rearranging(kind)}


def halves_viewed(b: Any, batch: int, shape: Sequence[int]) -> bool:
    """Whether the halves a region slices a stream of ``shape`` (per sample) into are dense
    views of one storage, not copies (``runtime_streams.apart``): one sample in channels-first
    streams, or no positions."""
    return batch == 1 and not (b.channels_last and _prod(shape[1:]) != 1)


_ADDITIVE = frozenset({"AdditiveCoupling", "Merge", "Group", "Repeat"})


def dead_before_additive(b: Any, steps: Sequence[str], bare: AbstractSet[str]) -> set[str]:
    """The AffineCoupling steps of a region whose output a flow layer rebuilds bare (``bare``:
    :func:`bare_streams`) and whose step before is additive (a coupling node, a wired block, a
    Group or Repeat of them): that step's first update makes its x1 a correction of its own
    again, beside the dead y2 part of the storage x1 is a view of (one sample), which an
    AffineCoupling before it would pass on still bare (:func:`bare_x1`)."""
    if not _pairs(b):
        return set()
    found = list(computing(b, steps))
    return {sid for (sid, kind), (_, prev) in zip(found[1:], found[:-1])
            if kind == "AffineCoupling" and sid in bare and prev in _ADDITIVE}


@dataclass(frozen=True, slots=True)
class Facts:
    """What the analysis of a region knows of one coupling step, for its moments
    (``peak_steps.coupling_moments``)."""

    bare: bool = False         # backward rebuilds its output with no correction (:func:`bare_streams`)
    part_bare: int = 0         # the bytes of its output's correction missing otherwise (:func:`bare_x1`)
    split_lo: bool = False     # its output's halves come back corrected apart (:func:`split_corrections`)
    dead_before: bool = False  # an additive step before it holds its dead part (:func:`dead_before_additive`)
    x1_anew: bool = False      # its x1 gradient is summed into a new buffer (:func:`x1_summed_anew`)
    flow_next: bool = False    # a flow layer with weights directly follows it (:func:`uncorrected`)
    x1_bare: bool = False      # at one sample its x1 comes back bare (:func:`bare_x1_viewed`)
    anew: bool = False         # backward rebuilds its output where the runtime does not own it (:func:`unowned_rebuild`)
    # ...before a plugin's layer whose inverse hands back a view, whose pair has no correction
    # (``peak_unowned.plugin_rebuilt``)
    anew_bare: bool = False


@dataclass(slots=True)
class Analysis:
    """Which of a region's streams backward rebuilds without a correction, and what follows
    each step (:func:`analyse`)."""

    following: dict[str, After]
    bare_wired: set[str]
    flow_first: dict[str, str]
    facts: dict[str, Facts] = field(default_factory=dict)
    anew: list[str] = field(default_factory=list)  # the steps rebuilt anew (:func:`unowned_rebuild`)

    def nexts(self, sid: str) -> str | None:
        """The type of the step after ``sid`` that computes (None: the region's end)."""
        return self.following.get(sid, NOTHING_AFTER)[0]

    def of(self, sid: str) -> Facts:
        return self.facts.get(sid, _NO_FACTS)


_NO_FACTS = Facts()


def analyse(b: Any, steps: Sequence[str], couplings: Mapping[str, Any], after: After = NOTHING_AFTER,
            end: bool = False) -> Analysis:
    """The analysis of a region's ``steps`` (forward order; ``couplings``: its wired couplings,
    by their Merge) that ``after`` follows. (A Group whose body is spliced passes what follows it
    on, past a Squeeze too: random network 601's coupling node in a Group before a Squeeze and an
    ActNorm was 1.8 % under at batch 1, its streams priced as corrected.) ``end``: the steps are a
    spliced body's last copy, whose output backward rebuilds unowned (:func:`unowned_rebuild`)."""
    following = after_each(b, steps, after)
    nexts = {sid: near for sid, (near, _) in following.items()}
    bare = bare_streams(b, steps, after[1])
    wired = bare_wired(b, steps, couplings, after[1])
    parts = bare_x1(b, steps, bare)
    split_lo = split_corrections(b, steps, couplings, bare, wired)
    x1_bare = bare_x1_viewed(b, steps, bare)
    dead_on = dead_before_additive(b, steps, bare)
    x1_anew = x1_summed_anew(nexts)
    flows = uncorrected(b, nexts)
    anew = unowned_rebuild(b, steps, couplings, end) if after == NOTHING_AFTER or end else []
    plugin = plugin_rebuilt(b, steps, couplings) if anew and not end else set()
    facts = {sid: Facts(sid in bare, parts.get(sid, 0), sid in split_lo, sid in dead_on, sid in x1_anew,
                        sid in flows, sid in x1_bare, sid in anew, sid in plugin) for sid in nexts}
    return Analysis(following, wired, flow_joined(b, steps, couplings, after[0]), facts, anew)
