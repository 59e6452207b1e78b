"""A region's side inputs' gradients in its backward (``peak_units.UnitBuilder.region``).

A side input is a value only a wired coupling's F reads: the region keeps it and hands it a
gradient, made by the backward of the steps whose F reads it. Where a later step's F reads it
through adds alone (a skip Merge whose sum is that F's output), its backward hands the side
input the stream's own gradient, not a buffer of its own, until an earlier step's F sums into
it. Torch-free.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .estimate_walk import _values_of
from .peak import Value
from .peak_steps import wired_walk


def side_unmade(b: Any, region: Any, reads: Sequence[Value], owners: Sequence[str]) -> tuple[list[int], int]:
    """Per moment of ``region``'s backward (``owners``: the step each is of, in forward order):
    the bytes of its side inputs' gradients the walk counts from the start of the region's
    backward but the step's own moment counts again or that do not exist yet; and the bytes of
    all of them. A side input (one only F reads: kept, not rebuilt) gets its gradient from the
    backward of the last step whose F reads it, and that step's moments count it themselves
    (F's walk makes the gradients of what F reads). A fork rejoining in a wired coupling
    (``m = relu(c) + tanh(c)``: the region reads ``c`` as F's side input and rebuilds
    ``relu(c)``) was 9.5 % over at batch 8, and with a Conv before the tanh 13.4 % at batch 32,
    ``c``'s gradient counted from the start and again in F's backward. Where that last step
    hands it on through adds alone (:func:`passed_on`), it is a buffer of its own only from the
    last step before that reads it otherwise, and that step's F sums into it anew as it ends
    (:func:`_summed_at`)."""
    bases = {b.w.base(v) for v in _values_of(b.w, getattr(region, "side", ()) or ())} - {None}
    side = {v: b.w.nbytes(v) for v in reads if b.needs_grad(v) and b.w.base(v) in bases}
    if not side:
        return [0] * len(owners), 0
    couplings = getattr(region, "couplings", {}) or {}
    steps = list(getattr(region, "steps", ()))
    position = {s: i for i, s in enumerate(steps)}
    last: dict[Value, int] = {}  # the step whose backward makes each one's gradient
    own: dict[Value, int] = {}  # of those, the last that makes it a buffer of its own
    for i, sid in enumerate(steps):
        for n in (sid, *getattr(couplings.get(sid), "body", ())):
            for v in b.reads(n) if n in b.position else ():
                if v in side:
                    last[v] = i
                    if not passed_on(b, couplings.get(sid), n, v):
                        own[v] = i
    at = [position.get(sid, -1) for sid in owners]
    out = []
    for i in at:
        gone = 0
        for v, n in side.items():
            made = last.get(v, len(steps))
            if 0 <= made <= i:
                gone += n
            elif v in own and own[v] < made and own[v] <= i:  # the stream's own gradient till then
                gone += n if own[v] < i else _summed_at(b, couplings.get(steps[own[v]]), steps[own[v]], n)
        out.append(gone)
    return out, sum(side.values())


def passed_on(b: Any, coupling: Any, nid: str, v: Value) -> bool:
    """Whether node ``nid`` of a wired coupling's F (``coupling``) hands ``v``'s gradient on as
    the gradient of F's output itself: an add Merge reading ``v`` once, of ``v``'s bytes, whose
    sum only such adds in F read on to F's output (autograd's add hands each operand its
    gradient as is; a sum of two readers' gradients would be a new buffer)."""
    if coupling is None or getattr(coupling, "sign", 1) != 1:
        return False
    body = set(getattr(coupling, "body", ()))
    nodes = [n for n in (coupling.merge, *body) if n in b.position]
    seen: set[str] = set()
    while True:
        view = b.w.views.get(nid)
        if nid not in body or nid in seen or view is None or view.type != "Merge" or view.params.get("mode") != "add":
            return False
        seen.add(nid)
        if sum(1 for n in nodes for r in b.reads(n) if r == v) != 1:
            return False
        out = (nid, "out")
        if b.w.nbytes(out) != b.w.nbytes(v):
            return False
        if f"{nid}.out" == coupling.f:
            return b.w.readers.get(out, 0) == 1
        readers = [n for n in nodes if out in b.reads(n)]
        if len(readers) != 1 or b.w.readers.get(out, 0) != 1:
            return False
        nid, v = readers[0], out


def _summed_at(b: Any, coupling: Any, sid: str, n: int) -> int:
    """Of a side input's ``n`` bytes of gradient, what the moment of the step whose F reads it
    otherwise (``sid``) counts too many where an earlier-running step handed it the stream's
    own: that F's backward sums its own into it anew once its layers are done, which the moment
    then holds beside the gradients of what F reads; the rest of F's backward holds no buffer of
    it (``wired_walk``'s most, net of F's output and its gradient and of its weights')."""
    if coupling is None:
        return 0
    walked = wired_walk(b, sid, coupling.body)
    if walked is None:
        return 0
    layers = set(coupling.body)
    ins = sum(b.w.nbytes(v) for m in coupling.body if m in b.position
              for v in b.reads(m) if v[0] not in layers and b.needs_grad(v))
    return max(0, min(n, walked[0] - ins))
