"""The units each mode's peak walk runs (``peak.simulate``), in execution order: an ordinary
layer per unit in every mode, a whole region in reversible mode (its kept head's layers apart,
under a memory budget), a checkpointed segment in checkpoint mode. ``estimate`` calls them
lazily, only when a peak is asked for. Torch-free.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from types import SimpleNamespace
from typing import Any

from .estimate_segments import _region_segment_nodes
from .estimate_walk import _Walker
from .peak import Unit, Walk
from .peak_segments import pieces, segment
from .peak_units import UnitBuilder

MODES = ("standard", "reversible", "checkpoint")


def _peaks(walker: _Walker, order: list[str], regions: Sequence[Any], runs: list[list[str]],
           stream_bytes: int, device: str = "cpu") -> tuple[dict[str, Walk], tuple[int, ...]]:
    """The simulated step per mode (``peak.simulate``), and the batches where the peak may drop
    (``MemoryEstimate.batch_breaks``)."""
    b = UnitBuilder(walker, order, stream_bytes, device)
    by_node = {n: r for r in regions for n in getattr(r, "nodes", ())}
    run_of = {n: i for i, run in enumerate(runs) for n in run}
    units: dict[str, list[Unit]] = {m: [] for m in MODES}
    done: set[Any] = set()
    for nid in b.order:
        units["standard"].append(b.node(nid))
        region = by_node.get(nid)
        if region is not None:
            if id(region) not in done:
                done.add(id(region))
                units["reversible"].append(b.region(region))
                for k, members in enumerate(_region_segment_nodes(walker, region)[1]):
                    if members:
                        units["checkpoint"].append(pieces(b, f"{getattr(region, 'id', '')}#{k}", members))
            continue
        units["reversible"].append(b.node(nid))
        if nid in run_of:
            if ("run", run_of[nid]) not in done:
                done.add(("run", run_of[nid]))
                run = [n for n in runs[run_of[nid]] if n in walker.views]
                units["checkpoint"].append(segment(b, f"segment {run[0]}..{run[-1]}", run))
            continue
        units["checkpoint"].append(b.node(nid))
    return {mode: b.walk(units[mode]) for mode in MODES}, tuple(sorted(b.breaks))


def _keeping(walker: _Walker, order: list[str], regions: Sequence[Any], stream_bytes: int,
             heads: Mapping[str, AbstractSet[str]], inside: Mapping[str, int], device: str = "cpu") -> Walk:
    """Reversible mode's units, with each region's ``heads`` nodes as standard units and the
    rest of the region as one reversible unit (see ``MemoryEstimate.peak_keeping``)."""
    b = UnitBuilder(walker, order, stream_bytes, device)
    by_node = {n: r for r in regions for n in getattr(r, "nodes", ())}
    units: list[Unit] = []
    done: set[int] = set()
    for nid in b.order:
        region = by_node.get(nid)
        head = heads.get(getattr(region, "id", ""), frozenset()) if region is not None else frozenset()
        if region is None or nid in head:
            units.append(b.node(nid))
        elif id(region) not in done:
            done.add(id(region))
            rest = b.region(_tail(region, head) if head else region)
            # the rest releases the values the head made that it reads (their storage, where a kept
            # step saved them; not the region's inputs, a view of which a kept step may hold) and
            # rebuilds them at the end of its backward
            kept = {s for u in units if u.name in head for s in u.saved}
            rest.extra += inside.get(getattr(region, "id", ""), 0) - sum(
                walker.nbytes(base) for base in {walker.base(v) for v in rest.reads if v[0] in head}
                if base is not None and base in kept and base[0] in head)
            units.append(rest)
    return b.walk(units)


def _tail(region: Any, head: AbstractSet[str]) -> Any:
    """The part of ``region`` after its kept ``head``: a region of its own for the unit builder."""
    couplings = getattr(region, "couplings", {}) or {}
    steps = [s for s in getattr(region, "steps", ()) if s not in head]
    return SimpleNamespace(id=f"{getattr(region, 'id', '')} (rest)", steps=steps, head=head,
                           nodes=[n for n in getattr(region, "nodes", ()) if n not in head],
                           outputs=list(getattr(region, "outputs", ())), side=list(getattr(region, "side", ()) or ()),
                           couplings={k: c for k, c in couplings.items() if k in steps})
