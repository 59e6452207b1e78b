"""Where new nodes go: free space beside what one is working on, never on top of it.

Palette adds (Enter, double-click) and other placements ask :func:`free_spot` for a
box of a node's size next to the selection; :func:`is_free` says no node is there.
"""
from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QGraphicsScene

from .node_item import NodeItem

FREE_AIR = 30.0  # space kept between a newly placed node and its neighbours


def is_free(scene: QGraphicsScene, rect: QRectF) -> bool:
    """No node overlaps ``rect`` (with a little air around it)."""
    probe = rect.adjusted(-FREE_AIR, -FREE_AIR, FREE_AIR, FREE_AIR)
    return not any(isinstance(i, NodeItem) for i in scene.items(probe))


def free_spot(scene: QGraphicsScene, size: tuple[float, float], near: QRectF) -> QPointF:
    """A top-left for a ``size`` box in free space next to ``near`` (the selection).

    Tries the column right of ``near`` first, going down then up, then the
    next column: new things appear beside what one is working on, never on it.
    """
    w, h = size
    step = max(40.0, min(h, 120.0))
    for column in range(6):
        x = near.right() + FREE_AIR * 2 + column * (w + FREE_AIR * 2)
        for k in range(12):
            for sign in ((1,) if k == 0 else (1, -1)):
                y = near.top() + sign * k * step
                if is_free(scene, QRectF(x, y, w, h)):
                    return QPointF(x, y)
    return QPointF(near.right() + FREE_AIR * 2, near.top())
