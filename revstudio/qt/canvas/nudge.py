"""Arrow keys nudge the selected nodes: a small step, or a grid step with Shift.

Each press is one undo step; a held key's auto-repeats merge into the press's step
(``Nudge`` merges, and a fresh press breaks the merge). With nothing selected the
arrows keep scrolling the view, as QGraphicsView does.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeyEvent

from revstudio.core.commands import Nudge

STEP = 5.0        # scene px: a quarter of the minor grid, still whole pixels in the file
GRID_STEP = 20.0  # Shift+arrow: one minor grid step (backdrop.GRIDS)
DIRECTIONS = {Qt.Key.Key_Left: (-1, 0), Qt.Key.Key_Right: (1, 0), Qt.Key.Key_Up: (0, -1), Qt.Key.Key_Down: (0, 1)}
KEYS = "Left, Right, Up, Down"
GRID_KEYS = "Shift+Left, Shift+Right, Shift+Up, Shift+Down"


def nudge_key(view: Any, event: QKeyEvent) -> bool:
    """Move the view's selected nodes for an arrow or Shift+arrow key and return True; any
    other key, or no node selected, returns False and leaves the key to the view."""
    direction = DIRECTIONS.get(Qt.Key(event.key()))
    if direction is None:
        return False
    mods = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
    if mods not in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.ShiftModifier):
        return False
    scene = view.scene()
    ids = scene.selected_node_ids()
    if not ids:
        return False
    step = GRID_STEP if mods == Qt.KeyboardModifier.ShiftModifier else STEP
    scene.flush_moves()
    graph = scene.graph
    moves = {}
    for node_id in ids:
        x, y = graph.node(node_id).pos
        moves[node_id] = (float(round(x + direction[0] * step)), float(round(y + direction[1] * step)))
    if not event.isAutoRepeat():
        view.document.break_merge()  # a new press is a new undo step
    scene.push(Nudge(graph, moves))
    view.ensureVisible(scene.nodes_rect(ids), 20, 20)
    return True
