"""The units each mode's peak walk runs (``peak.simulate``), in execution order: an ordinary
layer per unit in every mode, a whole region in reversible mode (its kept head's layers apart,
under a memory budget), a checkpointed segment in checkpoint mode. ``estimate`` calls them
lazily, only when a peak is asked for. Torch-free.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from types import SimpleNamespace
from typing import Any

from . import peak_layouts, peak_steps
from .estimate_segments import _region_segment_nodes
from .estimate_walk import _values_of, _Walker
from .peak import Unit, Value, Walk
from .peak_couplings import COUPLINGS
from .peak_inline import Inline
from .peak_outputs import handed_back
from .peak_segments import pieces, segment
from .peak_steps import sample_bytes
from .peak_units import UnitBuilder
from .save_rules import between_bytes

MODES = ("standard", "reversible", "checkpoint")


def known_mode(mode: str) -> str:
    """``mode``, refused where the estimate has no figures for it (a KeyError naming only the mode before)."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not known; use one of {', '.join(MODES)}")
    return mode


# node types that run group bodies of their own (walked as their layers: ``peak_inline``)
BODIED = frozenset({"Group", "Repeat", *COUPLINGS})


def _peaks(walker: _Walker, order: list[str], regions: Sequence[Any], runs: list[list[str]],
           stream_bytes: int, device: str = "cpu") -> tuple[dict[str, Walk], tuple[int, ...]]:
    """The simulated step per mode (``peak.simulate``), and the batches where the peak may drop
    (``MemoryEstimate.batch_breaks``)."""
    b = UnitBuilder(walker, order, stream_bytes, device)
    # Groups, Repeats and coupling nodes each mode runs whole, as their layers (a walk's own
    # namespace: the values its inlined bodies make exist in that mode only)
    flat = {mode: Inline(b, checkpoint=mode == "checkpoint") for mode in MODES}
    for nid in b.order:  # in execution order: a Split finds the join it undoes already made
        flat["standard"].units(nid)
    nested = Inline(b, checkpoint=True)  # the checkpoint segments' recomputes, each walked alone
    for ns in (flat["checkpoint"], nested):  # their segments hand on what standard mode's layers make
        ns.names_of(flat["standard"])

    def recompute(nodes: Iterable[str]) -> Inline:
        """The namespace a segment's recompute is walked in: standard mode's, unless a node runs
        a body of its own, which checkpoints its own runs of layers when it runs."""
        bodied = any(walker.views[n].type in BODIED for n in nodes if n in walker.views)
        return nested if bodied else flat["standard"]

    by_node = {n: r for r in regions for n in getattr(r, "nodes", ())}
    run_of = {n: i for i, run in enumerate(runs) for n in run}
    last = _last_steps(b, regions)
    units: dict[str, list[Unit]] = {m: [] for m in MODES}
    done: set[Any] = set()
    pins: dict[Value, int] = {}  # checkpoint mode: segment inputs that hold more (or less) than their bytes
    for nid in b.order:
        units["standard"] += flat["standard"].units(nid)
        region = by_node.get(nid)
        if region is not None:
            if last[id(region)] == nid:
                units["standard"].append(_held_inputs(walker, region))
            if id(region) not in done:
                done.add(id(region))
                units["reversible"].append(b.region(region))
                units["checkpoint"] += _region_pieces(b, walker, region, recompute, pins)
                units["checkpoint"].append(_held_inputs(walker, region))
            continue
        units["reversible"] += _relaid(b, nid, flat["reversible"].units(nid))
        if nid in run_of:
            if ("run", run_of[nid]) not in done:
                done.add(("run", run_of[nid]))
                run = [n for n in runs[run_of[nid]] if n in walker.views]
                units["checkpoint"].append(segment(b, f"segment {run[0]}..{run[-1]}", run, recompute(run)))
            continue
        units["checkpoint"] += flat["checkpoint"].units(nid)
    for v, more in pins.items():
        flat["checkpoint"].resize(v, flat["checkpoint"].nbytes(v) + more)
    return {mode: flat[mode].walk(units[mode]) for mode in MODES}, tuple(sorted(b.breaks))


def _region_pieces(b: UnitBuilder, walker: _Walker, region: Any, recompute: Any,
                   pins: dict[Value, int] | None = None) -> list[Unit]:
    """Checkpoint mode's segments of ``region``, built last to first: a segment hands the one
    before it its inputs' gradients, and where one is a view of a larger buffer (a coupling's
    x2, whose gradient the Concat after it slices from the joined one: ``Walk.grads``) the
    segment before seeds its recompute with that buffer, which goes once its backward has used
    it (random network 62 at batch 8: 3.8 % over with the rest of the buffer counted to the end
    of that segment's backward). ``pins``: ``peak_segments._pinned``'s, per segment input."""
    found: list[Unit] = []
    handed: dict[Value, int] = {}
    segments = list(enumerate(_region_segment_nodes(walker, region)[1]))
    # the storages each segment keeps as its inputs, which no other segment's pins again
    crossing = [b.outside({m[0] for m in members}) for _, members in segments]  # (``segment`` reads them too)
    inputs = [{base for base in (b.w.base(v) for v in reads) if base is not None} for reads, _ in crossing]
    for k, members in reversed(segments):
        if members:
            elsewhere = set().union(*(s for i, s in enumerate(inputs) if i != k))
            unit = pieces(b, f"{getattr(region, 'id', '')}#{k}", members, recompute(m[0] for m in members), handed,
                          elsewhere, crossing[k], pins)
            handed = dict(unit.grad_bytes or {})
            found.append(unit)
    return found[::-1]


def _relaid(b: UnitBuilder, nid: str, found: list[Unit]) -> list[Unit]:
    """An ordinary layer's units where regions run as streams (reversible mode): a Conv reading a
    channels_last value copies its weight's gradient after its backward (``peak_layouts.weight_copy``)."""
    more = peak_layouts.weight_copy(b, nid)
    for u in found if more else ():
        u.work_after = max(u.work_after, more)
    return found


def _last_steps(b: UnitBuilder, regions: Sequence[Any]) -> dict[int, str | None]:
    """Per region (by ``id``): the node it runs last."""
    return {id(r): max((n for n in getattr(r, "nodes", ()) if n in b.position), key=b.position.__getitem__,
                       default=None) for r in regions}


def _held_inputs(walker: _Walker, region: Any) -> Unit:
    """Where a region runs its steps one by one (standard and checkpoint mode), the call holds
    its inputs until its last step has run: a unit reading them then, doing nothing else. They
    are named as the walk's namespace resolves them: a Split's outputs that are the parts a
    coupling node hands on unjoined hold those parts, not the joined value it never makes (random
    skip network 21: a region from a coupling node to a Split, 7 % over in standard mode)."""
    values = [v for v in _values_of(walker, getattr(region, "inputs", ()), raw=True) if v is not None]
    return Unit(f"{getattr(region, 'id', '')} (returns)", values, [], grad=False)


def _keeping(walker: _Walker, order: list[str], regions: Sequence[Any], stream_bytes: int,
             heads: Mapping[str, AbstractSet[str]], inside: Mapping[str, tuple[int, int]],
             device: str = "cpu") -> Walk:
    """Reversible mode's units, with each region's ``heads`` nodes as standard units and the
    rest of the region as one reversible unit (see ``MemoryEstimate.peak_keeping``)."""
    b = UnitBuilder(walker, order, stream_bytes, device)
    flat = Inline(b)  # the kept steps and the layers outside regions run as in standard mode
    by_node = {n: r for r in regions for n in getattr(r, "nodes", ())}
    last = _last_steps(b, regions)
    units: list[Unit] = []
    done: set[int] = set()
    for nid in b.order:
        region = by_node.get(nid)
        head = heads.get(getattr(region, "id", ""), frozenset()) if region is not None else frozenset()
        if region is None or nid in head:
            units += _relaid(b, nid, flat.units(nid)) if region is None else flat.units(nid)
            if region is not None and last[id(region)] == nid and set(getattr(region, "nodes", ())) <= head:
                units.append(_held_inputs(walker, region))  # kept whole: it runs as in standard mode
        elif id(region) not in done:
            done.add(id(region))
            within, copies = inside.get(getattr(region, "id", ""), (0, 0))
            steps = list(getattr(region, "steps", ()))
            at = next((i for i, s in enumerate(steps) if s not in head), 0)
            # the cut falls inside the Repeat the rest starts with: its kept copies run before the
            # rest, their activations and their weights' gradients the head's
            walked = _kept_copies(flat, walker, steps[at], copies) if copies else None
            tail = _tail(region, head, copies, walked[2] if walked else 0) if head or copies else region
            rest = b.region(tail)
            layers = [u for n in head for u in flat.units(n)]
            lumped: list[Unit] = []
            if copies:
                if stream_bytes > walker.elem:  # the rest samples what the last kept copy hands
                    # it for its inversion error, where the Repeat's input is the caller's too
                    given = [(src.node, src.port) for p in walker.views[steps[at]].inputs
                             if (src := walker.source.get((steps[at], p))) is not None]
                    rest.extra += sample_bytes(walker, given, (), {v[0] for v in given}) - sample_bytes(walker, given, ())
                if walked is not None:  # the rest reads what the last kept copy hands on
                    gone = _given(walker, steps[at])
                    rest.reads = [*walked[1], *(v for v in rest.reads if v not in gone)]
                    rest.read_bases = None
                    layers += walked[0]
                    units += walked[0]
                else:  # one unit a copy, priced: a copy's backward frees its activations before
                    # the gradients of the copy before it appear (alike: the copies' shares)
                    if at:  # the first holds what it keeps of the value handed to it (of a region
                        # input, the head's price has it: its freed input)
                        within += _first_copy_holds(walker, steps[at], steps[at - 1])
                    params = peak_steps.kept_params(b, tail)
                    lumped = [Unit(f"{steps[at]} (kept copy {i + 1})", [], [],
                                   extra=within // copies + (within % copies if i == 0 else 0),
                                   params=params // copies + (params % copies if i == 0 else 0))
                              for i in range(copies)]
            # the rest releases the values the head made that it reads (their storage, where a kept
            # step saved them; not the region's inputs, a view of which a kept step may hold) and
            # rebuilds them at the end of its backward: values that are a storage's whole (a Split's
            # part of a coupling's result is a half of its own; one of a whole value is a view,
            # which leaves the storage to the head's other readers)
            kept = {s for u in layers for s in u.saved}
            made = {m for u in layers for m in u.makes if flat.base(m) == m}
            rest.extra -= sum(
                flat.nbytes(base) for base in {_whole_base(flat, v) for v in rest.reads}
                if base is not None and base in kept and base in made)
            # and holds a stream copy of its own of what it hands back untouched, beside the storage
            # a kept step saved (``peak_outputs.handed_back``)
            named = [v for v in _values_of(walker, tail.outputs, raw=True) if v is not None]
            # (or kept as its input itself: ``Unit.extra_fwd``, a batch of one InvConv1x1's)
            held = kept | {flat.base(u.reads[0]) for u in layers if u.extra_fwd is not None and u.grad and u.reads}
            rest.extra += sum(flat.nbytes(base) for base in {flat.base(v) for v in handed_back(tail, named, rest.reads)}
                              if base is not None and base in held)
            units += lumped
            units.append(rest)
    return flat.walk(units)


# steps whose result the runtime joins from parts (a Split right after them takes them apart
# again), as a Group or Repeat whose body ends with a Concat does
_JOINS = frozenset({"Concat", *COUPLINGS})


def _kept_copies(flat: Inline, walker: _Walker, repeat: str, copies: int
                 ) -> tuple[list[Unit], list[Value], int] | None:
    """The first ``copies`` copies of ``repeat`` as standard mode's layers (what each keeps, a
    view of the value handed to the first among it, is walked as it runs, and its weights'
    gradients appear layer by layer), the values the last of them hands the rest, and the bytes
    of those values' gradients beyond the Repeat's input's (the rest's backward makes them: a
    caller's input needs none); None where the Repeat is not walked as its copies."""
    view = walker.views[repeat]
    times = max(1, int(view.params.get("times", 1) or 1))
    got = flat.piece_units([(repeat, 0, copies, times)])
    if got is None or not got[1]:
        return None
    units, ends = got
    given = _given(walker, repeat)
    handed = sum(flat.nbytes(v) for v in ends if flat.needs_grad(v))
    had = sum(walker.nbytes(v) for v in given if v is not None and flat.needs_grad(v))
    return units, ends, max(0, handed - had)


def _given(walker: _Walker, repeat: str) -> set[Value | None]:
    """The values handed to Repeat ``repeat`` (its first copy's inputs)."""
    return {walker.input_value(repeat, port) for port in walker.views[repeat].inputs}


def _first_copy_holds(walker: _Walker, repeat: str, before: str) -> int:
    """Bytes the first copy of ``repeat`` keeps of the value step ``before`` hands it: what a
    copy keeps of the copy before's (``between_bytes``), but where its body starts with a Split
    of a value that nothing joins (a Concat's, a coupling's two halves, a body's ending in a
    Concat: the runtime hands those on unjoined), or where the body is one coupling node that
    splits such a value itself, a part it keeps is a view that keeps the whole value."""
    view = walker.views[repeat]
    body = view.bodies.get("group")
    if body is None:
        return 0
    prev = walker.views.get(before)
    joins = prev is not None and (prev.type in _JOINS or getattr(prev.bodies.get("group"), "tail_cat", None))
    keeps_part = any(body.head_split[2]) if body.head_split is not None else body.input_part_bytes > 0
    if keeps_part and not joins:
        return sum(walker.nbytes(v) for v in _given(walker, repeat) if v is not None)
    return between_bytes(body, view.batch, view.element_bytes)


def _whole_base(flat: Inline, v: Value) -> Value | None:
    """The storage value ``v`` is, where it is all of it (itself, or a Split's part the runtime
    hands on as a tensor of its own); None where ``v`` is a view of part of a storage."""
    base = flat.base(v)
    if base is None or base == v:
        return base
    kind = flat.root.w.report.nodes.get(v[0])
    whole = kind is not None and kind.type == "Split" and flat.nbytes(v) == flat.nbytes(base)
    return base if whole else None


def _tail(region: Any, head: AbstractSet[str], copies: int = 0, handed: int = 0) -> Any:
    """The part of ``region`` after its kept ``head``: a region of its own for the unit builder;
    ``copies``: of the Repeat it starts with, those kept (it runs the others); ``handed``: the
    bytes of the gradients it hands them beyond its inputs' (``UnitBuilder.region``)."""
    couplings = getattr(region, "couplings", {}) or {}
    steps = [s for s in getattr(region, "steps", ()) if s not in head]
    return SimpleNamespace(id=f"{getattr(region, 'id', '')} (rest)", steps=steps, head=head, handed=handed,
                           kept_copies={steps[0]: copies} if copies and steps else {},
                           nodes=[n for n in getattr(region, "nodes", ()) if n not in head],
                           outputs=list(getattr(region, "outputs", ())), side=list(getattr(region, "side", ()) or ()),
                           couplings={k: c for k, c in couplings.items() if k in steps})
