"""A Split's part that bypasses the rest of a reversible region (a multi-scale flow's
factored-out half), as the region's backward holds it.

Such a part reaches Output nodes only through Flattens, Reshapes and Concats, so its gradient
is a view of the loss's (``memory.default_loss``, a sum: an expanded scalar, no buffer) until
the coupling that made it sums into it; the peak walk counts the streams' gradients whole from
the start of the region's backward. At one sample the part is also a view of the held output's
copy, which it keeps whole beside the other half the coupling rebuilds anew.
Torch-free.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .peak_bare import bare_streams, halves_viewed
from .stream_updates import step_updates

_PASSING = frozenset({"Flatten", "Reshape", "Concat"})
_COUPLINGS = frozenset({"AdditiveCoupling", "AffineCoupling"})


def bypass_gone(b: Any, region: Any, owners: Sequence[str]) -> list[int]:
    """Per moment of ``region``'s backward (``owners``: the step each is of, in forward order):
    the bytes the walk counts there that are not held. (1) The gradient of a bypassing part (a
    part of a Split of a coupling's output that no step computes on again) is the loss's
    expanded scalar until the coupling sums into it: after an additive coupling's F has run
    backward (its own moments count it as the loss's), as an AffineCoupling's backward starts
    (after its moments). (2) At an additive coupling's moments the walk counts the streams as
    the held output's copy and its correction, whole, and the pair F's update makes of x1 (y1
    came back bare, through the other part's steps) as x1's value in the place of its part of
    the copy, with a correction of its own (``Facts.bare``). At one sample the halves are dense
    views of one storage: the bypassing part keeps the copy and its correction whole beside the
    new x1 pair, one half more at F's moment. From two samples on the parts were copied apart
    and x1's are gone: one half less at F's and G's. The additive multi-scale flow was 3.0 /
    10.9 / 12.6 % over at batches 2 / 8 / 32; the first rule alone left 8 / 32 5.4 / 6.3 % over
    and put batch 1 0.6 % under (measured, torch 2.13 CPU: at F's backward the copy, its
    correction and the new x1 pair at batch 1; at 8 the output, x2's copied pair and x1's pair)."""
    steps = list(getattr(region, "steps", ()))
    position = {s: i for i, s in enumerate(steps)}
    views = b.w.views
    parts: list[tuple[int, bool, int]] = []  # (the coupling that made it, additive, bytes)
    viewed: dict[int, int] = {}  # an additive coupling's moment -> what more it holds (2)
    for sid in steps:
        view = views.get(sid)
        reads = b.reads(sid) if view is not None and view.type == "Split" and sid in b.position else []
        maker = views.get(reads[0][0]) if reads else None
        at = position.get(reads[0][0]) if reads else None
        if maker is None or at is None or maker.type not in _COUPLINGS:
            continue
        made = b.makes(sid)
        passed = [v for v in made if _only_passed(b, v, views)]
        if not passed or len(passed) == len(made):
            continue
        additive = maker.type == "AdditiveCoupling"
        parts += [(at, additive, b.w.nbytes(v)) for v in passed]
        updates = step_updates(b.w, steps[at], None) if additive else []
        if updates and steps[at] in owners and steps[at] in bare_streams(b, steps):
            x1 = b.w.batch * updates[0][0] * b.elem
            first = owners.index(steps[at])  # (F's moment: the first; G's next)
            if halves_viewed(b, b.w.batch, maker.inputs.get("in") or ()):
                viewed[first] = x1
            else:
                for i in range(first, len(owners)):
                    if owners[i] == steps[at]:
                        viewed[i] = -x1
    out = []
    for i, sid in enumerate(owners):
        where = position.get(sid, -1)
        gone = sum(n for at, additive, n in parts if where > at or (additive and where == at))
        out.append(gone - viewed.get(i, 0))
    return out


def _only_passed(b: Any, v: Any, views: Any) -> bool:
    """Whether ``v`` reaches Output nodes only, through Flattens, Reshapes and Concats."""
    readers = b.readers.get(v, ())
    if not readers:
        return False
    for r in readers:
        view = views.get(r)
        if view is None:
            return False
        if view.type == "Output":
            continue
        if view.type not in _PASSING or not all(_only_passed(b, m, views) for m in b.makes(r)):
            return False
    return True
