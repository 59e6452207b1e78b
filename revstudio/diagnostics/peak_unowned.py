"""Which couplings of a reversible region backward rebuilds into memory the runtime does not own
(:func:`unowned_rebuild`, ``peak_bare.analyse``'s ``anew``): those before a layer whose inverse
hands back a view in another axis order. Torch-free.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def unowned_rebuild(b: Any, steps: Sequence[str], couplings: Mapping[str, Any], end: bool = False) -> list[str]:
    """The steps of a region (forward order) whose output backward rebuilds into memory the
    runtime does not own: an InvConv1x1 ends the region and follows them (a coupling node, or a
    wired block's couplings). The region hands out the einsum's product, a channels-first view
    from a batch of two on (not dense: ``flows._mix_channels_dense``), and the layer's inverse
    of that view is one again; the coupling before it then rebuilds each half anew (as
    ``peak_forward.forward_updates`` prices forward). Conv, InvConv1x1, AdditiveCoupling,
    InvConv1x1 was 7.8 % under in reversible mode at batch 8, 19 % on the image (ActNorm first);
    with a wired block 13.7 %. An ActNorm or InvConv1x1 between them hands that layout on (its
    inverse is elementwise, or the einsum's product of a view again), and a Group or Repeat whose
    body ends with couplings rebuilds its last copy's anew: random skip network 86 (a Repeat of
    couplings, ActNorm, InvConv1x1) under a 1 MiB budget at batch 8, whose rest peaks there, was
    11.2 % under. ``end``: ``steps`` are such a body's, the last copy's, which that follows.
    A plugin's invertible layer whose inverse hands back a view in another axis order
    (``SavedTensors.inverse_dense=False``, an einsum's product) does so wherever it is in the
    region, so the couplings before it rebuild anew too (:func:`plugin_rebuilt`)."""
    views = b.w.views
    found = [(sid, views[sid].type) for sid in steps if sid in views]
    if end:
        return _before(b, found, couplings)
    out: set[str] = set()
    if found and b.w.batch >= 2 and found[-1][1] == "InvConv1x1" and len(views[found[-1][0]].inputs.get("in") or ()) >= 2:
        out.update(_before(b, found[:-1], couplings))
    out.update(plugin_rebuilt(b, steps, couplings))
    return [sid for sid, _ in found if sid in out]


def plugin_rebuilt(b: Any, steps: Sequence[str], couplings: Mapping[str, Any]) -> set[str]:
    """The couplings of a region that backward rebuilds anew before a plugin's layer whose inverse
    hands back a view in another axis order (``SavedTensors.inverse_dense=False``), from a batch
    of two on. That inverse makes the streams' pair anew with no correction (``runtime_steps.
    Invertible``), so the correction of the region's outputs the walk keeps counting
    (``kept_wide``) is not there beside the update's new pair: a probe's squeeze-excite coupling,
    then such a Householder 1x1, then another coupling, was 6.8 % under at batch 32 without the
    rule, 13.3 % over with the correction counted twice (``peak_steps._halves``)."""
    views = b.w.views
    found = [(sid, views[sid].type) for sid in steps if sid in views]
    out: set[str] = set()
    for i, (sid, _) in enumerate(found):
        if b.w.batch >= 2 and not getattr(b.w.saves.get(sid), "inverse_dense", True):
            out.update(_before(b, found[:i], couplings))
    return out


def _before(b: Any, found: Sequence[tuple[str, str]], couplings: Mapping[str, Any]) -> list[str]:
    """Of ``found`` (step, type; forward order), the last couplings (a coupling node, or a wired
    block's), through the flow layers that hand a view on (``_LAYOUT_KEPT``)."""
    out: list[str] = []
    for sid, kind in reversed(found):
        if kind == "Concat" and not out:  # (a wired block's end)
            continue
        if kind in _LAYOUT_KEPT and not out:
            continue
        if sid in couplings:
            out.insert(0, sid)
            continue
        if kind == "AdditiveCoupling" and not out:
            out.append(sid)
        elif kind in ("Group", "Repeat") and not out and b.spliced(sid) is not None:
            out.append(sid)  # (its body's last couplings: ``analyse``'s ``end``)
        break
    return out


# flow layers whose inverse of a view that is not dense is not dense either: ActNorm's is
# elementwise (torch keeps its input's strides), InvConv1x1's the einsum's product of a view
_LAYOUT_KEPT = frozenset({"ActNorm", "InvConv1x1"})
