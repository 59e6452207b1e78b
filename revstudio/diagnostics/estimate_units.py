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

from .estimate_segments import _region_segment_nodes
from .estimate_walk import _values_of, _Walker
from .peak import Unit, Walk
from .peak_couplings import COUPLINGS
from .peak_inline import Inline
from .peak_segments import pieces, segment
from .peak_units import UnitBuilder

MODES = ("standard", "reversible", "checkpoint")
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
    for nid in b.order:
        units["standard"] += flat["standard"].units(nid)
        region = by_node.get(nid)
        if region is not None:
            if last[id(region)] == nid:
                units["standard"].append(_held_inputs(walker, region))
            if id(region) not in done:
                done.add(id(region))
                units["reversible"].append(b.region(region))
                for k, members in enumerate(_region_segment_nodes(walker, region)[1]):
                    if members:
                        units["checkpoint"].append(pieces(b, f"{getattr(region, 'id', '')}#{k}", members,
                                                          recompute(m[0] for m in members)))
                units["checkpoint"].append(_held_inputs(walker, region))
            continue
        units["reversible"] += flat["reversible"].units(nid)
        if nid in run_of:
            if ("run", run_of[nid]) not in done:
                done.add(("run", run_of[nid]))
                run = [n for n in runs[run_of[nid]] if n in walker.views]
                units["checkpoint"].append(segment(b, f"segment {run[0]}..{run[-1]}", run, recompute(run)))
            continue
        units["checkpoint"] += flat["checkpoint"].units(nid)
    return {mode: flat[mode].walk(units[mode]) for mode in MODES}, tuple(sorted(b.breaks))


def _last_steps(b: UnitBuilder, regions: Sequence[Any]) -> dict[int, str | None]:
    """Per region (by ``id``): the node it runs last."""
    return {id(r): max((n for n in getattr(r, "nodes", ()) if n in b.position), key=b.position.__getitem__,
                       default=None) for r in regions}


def _held_inputs(walker: _Walker, region: Any) -> Unit:
    """Where a region runs its steps one by one (standard and checkpoint mode), the call holds
    its inputs until its last step has run: a unit reading them then, doing nothing else."""
    values = [v for v in _values_of(walker, getattr(region, "inputs", ())) if v is not None]
    return Unit(f"{getattr(region, 'id', '')} (returns)", values, [], grad=False)


def _keeping(walker: _Walker, order: list[str], regions: Sequence[Any], stream_bytes: int,
             heads: Mapping[str, AbstractSet[str]], inside: Mapping[str, int], device: str = "cpu") -> Walk:
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
            units += flat.units(nid)
            if region is not None and last[id(region)] == nid and set(getattr(region, "nodes", ())) <= head:
                units.append(_held_inputs(walker, region))  # kept whole: it runs as in standard mode
        elif id(region) not in done:
            done.add(id(region))
            rest = b.region(_tail(region, head) if head else region)
            # the rest releases the values the head made that it reads (their storage, where a kept
            # step saved them; not the region's inputs, a view of which a kept step may hold) and
            # rebuilds them at the end of its backward
            layers = [u for n in head for u in flat.units(n)]
            kept = {s for u in layers for s in u.saved}
            made = {m for u in layers for m in u.makes if flat.base(m) == m}
            rest.extra += inside.get(getattr(region, "id", ""), 0) - sum(
                flat.nbytes(base) for base in {flat.base(v) for v in rest.reads if v[0] in head}
                if base is not None and base in kept and base in made)
            units.append(rest)
    return flat.walk(units)


def _tail(region: Any, head: AbstractSet[str]) -> Any:
    """The part of ``region`` after its kept ``head``: a region of its own for the unit builder."""
    couplings = getattr(region, "couplings", {}) or {}
    steps = [s for s in getattr(region, "steps", ()) if s not in head]
    return SimpleNamespace(id=f"{getattr(region, 'id', '')} (rest)", steps=steps, head=head,
                           nodes=[n for n in getattr(region, "nodes", ()) if n not in head],
                           outputs=list(getattr(region, "outputs", ())), side=list(getattr(region, "side", ()) or ()),
                           couplings={k: c for k, c in couplings.items() if k in steps})
