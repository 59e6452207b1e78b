"""A coupling node's ends as the Split and Concat the runtime makes of them.

Inside a region the runtime runs an AdditiveCoupling as a Slice of its input into x1 and x2, its
F and G steps, and a Cat of y1 and y2 (an AffineCoupling: of x1 and y2;
``compiler.assembly``), and fuses a Cat with the very next matching Slice into one rename
(``runtime_layout.fuse_cat_slice``). Two couplings in a row (or Group nodes whose bodies end and
start with one) then hand on their halves unjoined: the second keeps the half its F reads (the
first's y2, a tensor of its own), not the joined value. These give a coupling's start and end in
the ``BodySaves.head_split`` / ``tail_cat`` form that ``save_rules.unjoined_bytes`` matches.
Torch-free.
"""
from __future__ import annotations

from .save_rules import NodeView, Saves, coupling_split

End = tuple[str, tuple[tuple[int, ...], ...], tuple[bool, ...]]


def _halves(view: NodeView) -> tuple[tuple[int, ...], ...] | None:
    shape = view.inputs.get("in")
    if not shape:
        return None
    c1, c2 = coupling_split(view.params, shape)
    if c1 <= 0 or c2 <= 0:
        return None
    rest = tuple(int(d) for d in shape[1:])
    return (c1, *rest), (c2, *rest)


def coupling_head(view: NodeView | None, saves: Saves | None, port: str = "in") -> End | None:
    """An AdditiveCoupling's input as the Split it starts with: (``port``, the halves' shapes,
    which it keeps: x2, where its F keeps its input; never x1). None for any other node."""
    if view is None or saves is None or view.type != "AdditiveCoupling":
        return None
    halves = _halves(view)
    if halves is None:
        return None
    return port, halves, (False, saves.input_part_bytes > 0)


def coupling_tail(view: NodeView | None, port: str = "out") -> End | None:
    """A coupling's output as the Concat it ends with: (``port``, the halves' shapes, which of
    them it keeps itself: an AdditiveCoupling's y1 where its G keeps its input, an
    AffineCoupling's x1, a view of the input it keeps). None for any other node, and for an
    AdditiveCoupling without a G (its y2 is then its input's x2, no tensor of its own)."""
    if view is None or view.type not in ("AdditiveCoupling", "AffineCoupling"):
        return None
    halves = _halves(view)
    if halves is None:
        return None
    if view.type == "AffineCoupling":
        return port, halves, (True, False)
    g = view.bodies.get("g")
    if g is None:
        return None
    return port, halves, (bool(g.inputs), False)
