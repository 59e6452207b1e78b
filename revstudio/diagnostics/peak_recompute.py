"""The walk of a checkpoint segment's recompute (``torch.utils.checkpoint``), alone.

When backward reaches a checkpointed segment, torch recomputes it from its kept inputs, up to
the last tensor its backward needs (early stop), then runs its backward as standard mode does.
``recompute_walk`` walks exactly that over the segment's layers (``peak_inline.Inline``'s
units): from its inputs, which the walk of the step counts, with the gradients of its outputs
seeded, to its inputs' new gradients. Torch-free.
"""
from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any

from .peak import Unit, Value, forward_peak, simulate
from .peak_units import WIDE_BACKWARD, UnitBuilder

# A flow layer's (AffineCoupling, ActNorm, InvConv1x1) backward work is a rule measured on a
# whole training step (``peak_units.WIDE_BACKWARD``: two outputs' worth). Recomputed in a
# checkpoint segment of glow_flow the step holds half of that beside the segment's other layers:
# divided by this (torch 2.13 CPU: checkpoint peaks +6 to +8 %; with the whole rule +12 to +19 %,
# with none -3 to 0 %). A calibration, not a count: on random networks with flow layers the
# checkpoint estimate then runs up to 18 % low (benchmarks/README.md, "Layer by layer")
RECOMPUTED_FLOW_WORK = 2


def recompute_walk(ns: Any, units: list[Unit], reads: list[Value], makes: list[Value],
                   shared: AbstractSet[Value] = frozenset()) -> tuple[int, int]:
    """A checkpointed run of ``units`` (a segment) in namespace ``ns`` (an ``Inline``): (the peak
    of its recompute and backward, walked alone from its inputs ``reads``; what its forward
    holds at most beyond its outputs ``makes`` and its inputs, keeping nothing). ``shared``: the
    outputs whose gradients outlive its backward (views of a gradient other values have too:
    :func:`shared_outputs`)."""
    from .peak_inline import _copy

    base = ns.base
    infos = ns.root.w.report.nodes
    units = [_copy(u, work_bwd=u.work_bwd // RECOMPUTED_FLOW_WORK)
             if u.work_bwd and u.name in infos and infos[u.name].type in WIDE_BACKWARD else u for u in units]
    bases = [(m, base(m)) for u in units for m in u.makes]
    own = {m for m, b in bases if b == m}
    # the storages it makes views of that none of its units makes (the parts of a joined input
    # handed on unjoined) exist before it too
    before = [*reads, *{b for m, b in bases if b is not None and b != m and b not in own}]
    walk = simulate(units, ns.nbytes, base, ns.needs_grad, outside=before, early_stop=True,
                    seeds=[(m, m in shared) for m in makes])
    outputs = {b for b in (base(v) for v in makes) if b is not None}
    forward = forward_peak(units, ns.nbytes, base, before) - sum(ns.nbytes(b) for b in outputs)
    return walk.peak, max(0, forward)


def shared_outputs(b: UnitBuilder, makes: list[Value]) -> set[Value]:
    """Of a segment's outputs ``makes`` (values of ``b``'s graph), those whose gradient is a view
    of one other values have too: read by an add or a Concat (which hand the same gradient to
    each operand) or leaving a group body (whose caller may); it outlives the segment's backward."""
    out = set()
    infos, views = b.w.report.nodes, b.w.views
    for v in makes:
        for r in b.readers.get(v, ()):
            kind = infos[r].type
            merge = kind == "Merge" and str(views[r].params.get("mode", "add")) == "add"
            if merge or kind in ("Concat", "GroupOutput"):
                out.add(v)
                break
    return out
