"""The canvas's pointer gestures: a drag from a port draws a wire, Shift+click adds to the
selection, a node drag moves the selection and commits one Move on release. A base of
:class:`~revstudio.qt.canvas.scene.GraphScene`, which keeps the items these read.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QGraphicsSceneMouseEvent

from .node_item import NodeItem
from .scene_selection import SceneSelection
from .wire_item import WireItem
from .wiring import WireDrag


class SceneGestures(SceneSelection):
    """Mouse handling over the scene's node and wire items (``GraphScene`` fills them)."""

    node_items: dict[str, NodeItem]
    port_state: Any
    _wire: WireDrag | None
    _drop_wire: WireItem | None

    def items_moved(self, items: list[NodeItem]) -> None:  # pragma: no cover - GraphScene's
        raise NotImplementedError

    def commit_moves(self, splice: Any = None) -> bool:  # pragma: no cover - GraphScene's
        raise NotImplementedError

    def can_splice(self, node_id: str) -> bool:  # pragma: no cover - GraphScene's
        raise NotImplementedError

    def _splice_wire(self) -> WireItem | None:
        """While one unwired node is dragged: the wire under its centre, which a release there
        splices it into (as a palette drop onto a wire does)."""
        grabbed = self.mouseGrabberItem()
        if not isinstance(grabbed, NodeItem) or len(self.selectedItems()) != 1 or not grabbed.isSelected() \
                or not self.can_splice(grabbed.node_id):
            return None
        for item in self.items(grabbed.sceneBoundingRect().center()):
            if isinstance(item, NodeItem) and item is not grabbed:
                return None
            if isinstance(item, WireItem) and item.isVisible():
                return item
        return None

    def wire_at(self, pos: QPointF) -> WireItem | None:
        """The wire under ``pos``, unless a node is there (nodes sit above wires)."""
        for item in self.items(pos):
            if isinstance(item, NodeItem):
                return None
            if isinstance(item, WireItem) and item.isVisible():
                return item
        return None

    def set_port_filter(self, state: Any) -> None:
        """While a wire is drawn, ports show whether they can take it (``state(node, port, out)``)."""
        self.port_state = state
        for item in self.node_items.values():
            item.update()  # only the visible ones actually repaint

    def set_drop_wire(self, wire: WireItem | None) -> None:
        if wire is not self._drop_wire:
            if self._drop_wire is not None and self._drop_wire.scene() is self:
                self._drop_wire.set_highlight(False)
            self._drop_wire = wire
            if wire is not None:
                wire.set_highlight(True)

    def node_at(self, pos: QPointF) -> NodeItem | None:
        for item in self.items(pos):
            if isinstance(item, NodeItem):
                return item
        return None

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802
        if event.button() == Qt.MouseButton.LeftButton and self._wire is None:
            item = self.node_at(event.scenePos())
            hit = item.port_at(item.mapFromScene(event.scenePos())) if item is not None else None
            if item is not None and hit is not None:
                scene: Any = self  # (a GraphScene: the drag reads its document and checks)
                self._wire = WireDrag(scene, item.node_id, hit[0], hit[1])
                event.accept()
                return
            if item is not None and event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                item.setSelected(True)  # Shift+click adds (Blender and most editors); Ctrl+click toggles
                event.accept()
                return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802
        if self._wire is not None:
            self._wire.move(event.scenePos(), event.modifiers())
            event.accept()
            return
        super().mouseMoveEvent(event)
        if isinstance(self.mouseGrabberItem(), NodeItem) and event.buttons() & Qt.MouseButton.LeftButton:
            # Qt moved the grabbed node and the rest of the selection: their wires follow.
            self.items_moved([i for i in self.selectedItems() if isinstance(i, NodeItem)])
            self.set_drop_wire(self._splice_wire())

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802
        if self._wire is not None and event.button() == Qt.MouseButton.LeftButton:
            wire, self._wire = self._wire, None
            wire.finish(event.scenePos(), event.modifiers())
            event.accept()
            return
        splice = self._drop_wire
        super().mouseReleaseEvent(event)
        if event.button() == Qt.MouseButton.LeftButton:
            self.set_drop_wire(None)
            self.commit_moves(splice.edge if splice is not None else None)

    def cancel_gesture(self) -> None:
        """Escape or a rebuild mid-gesture: drop the provisional wire."""
        if self._wire is not None:
            wire, self._wire = self._wire, None
            wire.cancel()

    @property
    def wiring(self) -> bool:
        return self._wire is not None
