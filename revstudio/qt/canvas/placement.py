"""Where new nodes go: free space beside what one is working on, never on top of it.

Palette adds (Enter, double-click) and other placements ask :func:`free_spot` for a
box of a node's size next to the selection; :func:`is_free` says no node is there
(and, asked to, no wire runs through it: a copy set on a wire looked wired into it).
"""
from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QGraphicsScene

from .node_item import NodeItem
from .wire_item import WireItem

FREE_AIR = 30.0  # space kept between a newly placed node and its neighbours


def is_free(scene: QGraphicsScene, rect: QRectF, wires: bool = False) -> bool:
    """No node overlaps ``rect`` (with a little air around it); with ``wires``, no wire crosses it."""
    probe = rect.adjusted(-FREE_AIR, -FREE_AIR, FREE_AIR, FREE_AIR)
    items = scene.items(probe)
    if any(isinstance(i, NodeItem) for i in items):
        return False
    if wires:
        body = rect.adjusted(-FREE_AIR / 2, -FREE_AIR / 2, FREE_AIR / 2, FREE_AIR / 2)
        return not any(isinstance(i, WireItem) and i.scene_path().intersects(body) for i in items)
    return True


def free_spot(scene: QGraphicsScene, size: tuple[float, float], near: QRectF) -> QPointF:
    """A top-left for a ``size`` box in free space next to ``near`` (the selection).

    Tries the column right of ``near`` first, going down then up, then the
    next column: new things appear beside what one is working on, never on it,
    and off the wires where there is such room (else on a wire, never on a node).
    """
    w, h = size
    step = max(40.0, min(h, 120.0))
    for wires in (True, False):
        for column in range(6):
            x = near.right() + FREE_AIR * 2 + column * (w + FREE_AIR * 2)
            for k in range(12):
                for sign in ((1,) if k == 0 else (1, -1)):
                    y = near.top() + sign * k * step
                    if is_free(scene, QRectF(x, y, w, h), wires):
                        return QPointF(x, y)
    return QPointF(near.right() + FREE_AIR * 2, near.top())
