"""The canvas's selection, announced once per change a user makes.

Qt signals ``selectionChanged`` for every item selected or removed, so selecting the
1,000 nodes of a paste, or deleting them, refreshed the inspector once per node, each
time over the growing selection. Batches here hold the signal and announce the result
once. A base of :class:`~revstudio.qt.canvas.scene.GraphScene`.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene

from revstudio.core.graph import Edge

from .node_item import NodeItem
from .wire_item import WireItem

# While a rubber band grows, its selection reaches the inspector at most this often.
BAND_MS = 100


class SceneSelection(QGraphicsScene):
    """Selection queries and batched selection announcements (``selectionChangedIds``)."""

    selectionChangedIds = Signal(list)          # selected node ids
    node_items: dict[str, NodeItem]

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._selecting = 0              # > 0 inside a batch: changes are held back
        self._selection_moved = False    # a change was held back
        self._selection_timer = QTimer(self)
        self._selection_timer.setSingleShot(True)
        self._selection_timer.setInterval(0)
        self._selection_timer.timeout.connect(self.flush_selection)
        self.selectionChanged.connect(self._emit_selection)

    def selected_node_ids(self) -> list[str]:
        """The selected nodes in the canvas's order: Qt lists its selection from a hashed set it
        rebuilds lazily, so two calls in a row could give the same nodes in different orders."""
        chosen = {i.node_id for i in self.selectedItems() if isinstance(i, NodeItem)}
        if len(chosen) <= 1:
            return list(chosen)
        return [n for n in self.node_items if n in chosen]

    def selected_edges(self) -> list[Edge]:
        return [i.edge for i in self.selectedItems() if isinstance(i, WireItem)]

    def select_only(self, node_ids: list[str]) -> None:
        """Select exactly ``node_ids`` (ids not on this canvas are skipped); announce it once."""
        self._selecting += 1
        try:
            self.clearSelection()
            for node_id in node_ids:
                item = self.node_items.get(node_id)
                if item is not None:
                    item.setSelected(True)
        finally:
            self._selecting -= 1
        self.flush_selection()

    def remove_quietly(self, item: QGraphicsItem) -> None:
        """Remove an item; the selection it leaves is announced once the edit is done
        (at the undo stack's step, or on the next turn of the event loop)."""
        self._selecting += 1
        try:
            self.removeItem(item)
        finally:
            self._selecting -= 1
        if self._selection_moved:
            self._selection_timer.start(0)

    @contextmanager
    def held_selection(self) -> Iterator[None]:
        """A pointer gesture's step (a rubber band's mouse move): what it selects is announced
        at most every ``BAND_MS``, and at the gesture's end (``flush_selection``), not per move:
        each announcement walks the whole selection in the inspector."""
        self._selecting += 1
        try:
            yield
        finally:
            self._selecting -= 1
        if self._selection_moved and not self._selection_timer.isActive():
            self._selection_timer.start(BAND_MS)

    def flush_selection(self) -> None:
        """Announce a selection change held back during a batch (at most once)."""
        if self._selection_moved and not self._selecting:
            self._selection_moved = False
            self._selection_timer.stop()
            self.selectionChangedIds.emit(self.selected_node_ids())

    def _emit_selection(self) -> None:
        if self._selecting:
            self._selection_moved = True
            return
        self.selectionChangedIds.emit(self.selected_node_ids())
