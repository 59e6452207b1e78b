"""The gradient buffers at the end of ``peak.simulate``'s walk (what a recompute hands the values
it read) and those a unit may release. Torch-free.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet

Value = tuple[str, str]


def outside_grads(outside: Iterable[Value], grads: dict[Value, tuple[int, bool]], size_of: dict[int, int],
                   nbytes: Callable[[Value], int]) -> dict[Value, int]:
    """The values of ``outside`` whose gradient is a buffer larger than they are, and its bytes
    (``Walk.grads``; a buffer two of them view is counted for the first)."""
    found: dict[Value, int] = {}
    seen: set[int] = set()
    for v in outside:
        g = grads.get(v)
        if g is None or g[0] in seen or g[0] not in size_of:
            continue
        seen.add(g[0])
        if size_of[g[0]] > nbytes(v):
            found[v] = size_of[g[0]]
    return found


def outside_joins(outside: Iterable[Value], grads: dict[Value, tuple[int, bool]], size_of: dict[int, int],
                   handed: AbstractSet[int]) -> list[tuple[frozenset[Value], int]]:
    """The values of ``outside`` whose gradients are one buffer, two or more, and its bytes
    (``Walk.joins``); 0 where it is a gradient handed in (``handed``): a checkpointed add hands
    its inputs views of its output's, no new buffer (random skip network 15's one-add segment
    was counted one: 9.8 % over in checkpoint mode)."""
    by_buffer: dict[int, set[Value]] = {}
    for v in outside:
        g = grads.get(v)
        if g is not None and g[0] in size_of:
            by_buffer.setdefault(g[0], set()).add(v)
    return [(frozenset(vs), 0 if bid in handed else size_of[bid]) for bid, vs in by_buffer.items() if len(vs) > 1]


def dying(outs: list[int], viewed: set[int], size_of: dict[int, int], refs: dict[int, int],
          views: bool = False) -> int:
    """Bytes of the gradients of a unit's outputs (``outs``: their buffers) it may release:
    buffers held by it alone, of their own (the runtime's rule for a region), or also views
    (``views``: autograd's, which frees a buffer with its last view). A region keeps a buffer
    it holds under two outputs (an add handed both one tensor): two slots of its gradients."""
    holding: dict[int, int] = {}
    for bid in outs:
        holding[bid] = holding.get(bid, 0) + 1
    return sum(size_of[bid] for bid, k in holding.items() if refs[bid] == k and (views or bid not in viewed and k == 1))
