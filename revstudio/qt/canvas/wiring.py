"""Drawing a wire: press on a port, drag, release on a port (or on empty canvas).

A :class:`WireDrag` previews the curve and a live hint (the shape the wire would
carry, or why it cannot be drawn), then commits once on release: a ``Connect``
(or a replacing/re-plugging ``Macro``) through the document, a refusal with its
reason, or a quick-add request when the wire is dropped on empty canvas.
Starting on an input that is already fed picks that wire up, as in Blender.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, Qt

from revstudio.core.commands import Disconnect
from revstudio.core.graph import Edge, PortRef, reachable

from .connect_rules import structural_reason
from .display import format_shape
from .node_item import NodeItem
from .wire_item import DragWire

if TYPE_CHECKING:  # pragma: no cover
    from .scene import GraphScene


class WireDrag:
    """One wire being drawn from ``origin`` (an output, or an input when not picking up)."""

    def __init__(self, scene: GraphScene, node_id: str, port: str, is_output: bool) -> None:
        self.scene = scene
        self.moving: Edge | None = None
        graph = scene.graph
        if not is_output:
            fed = graph.edges_into(node_id, port)
            if fed:
                # Pick up the existing wire: the drag continues from its source output.
                self.moving = fed[0]
                node_id, port, is_output = fed[0].src.node, fed[0].src.port, True
                wire = scene.wire_items.get(self.moving)
                if wire is not None:
                    wire.hide()
        self.origin = PortRef(node_id, port)
        self.from_output = is_output
        anchor = scene.node_items[node_id].port_scene_pos(port, is_output)
        self.line = DragWire(anchor, is_output, scene.theme.hover)
        scene.addItem(self.line)
        self._hovered: NodeItem | None = None
        self._blocked = self._cycle_nodes()
        self._fed = {(e.dst.node, e.dst.port) for e in graph.edges if e != self.moving}
        scene.set_port_filter(self.port_state)
        # The cycle test walks the graph; a drag hovers the same few ports many times.
        self._reasons: dict[tuple[PortRef, PortRef, bool], str | None] = {}

    # ---- targets -------------------------------------------------------
    def _cycle_nodes(self) -> set[str]:
        """Nodes a wire from the origin may not reach: they would close a cycle.

        From an output, that is the origin and everything upstream of it; from an
        input, the origin and everything downstream. One walk per drag, so the
        port highlights cost nothing per mouse move.
        """
        step: dict[str, list[str]] = {}
        for e in self.scene.graph.edges:
            if self.from_output:
                step.setdefault(e.dst.node, []).append(e.src.node)
            else:
                step.setdefault(e.src.node, []).append(e.dst.node)
        return reachable([self.origin.node], step)

    def port_state(self, node_id: str, port: str, is_output: bool) -> str | None:
        """How a port looks during this drag: "ok" (can take the wire), "no", or None (other side)."""
        if is_output == self.from_output:
            return None
        if node_id in self._blocked:
            return "no"
        if not is_output and (node_id, port) in self._fed:
            return "no"  # Ctrl replaces it; the hint says so
        return "ok"

    def target_at(self, pos: QPointF) -> PortRef | None:
        """The port a release at ``pos`` would connect to: on the dot, or nearest on that node."""
        for item in self.scene.items(pos):
            if isinstance(item, NodeItem):
                if item.node_id == self.origin.node:
                    return None
                local = item.mapFromScene(pos)
                hit = item.port_at(local)
                want_output = not self.from_output
                if hit is not None and hit[1] == want_output:
                    return PortRef(item.node_id, hit[0])
                port = item.nearest_port(local, want_output)
                return PortRef(item.node_id, port) if port else None
        return None

    def _pair(self, target: PortRef) -> tuple[PortRef, PortRef]:
        return (self.origin, target) if self.from_output else (target, self.origin)

    # ---- gesture ---------------------------------------------------------
    def move(self, pos: QPointF, modifiers: Qt.KeyboardModifier) -> None:
        target = self.target_at(pos)
        item = self.scene.node_items.get(target.node) if target else None
        if self._hovered is not None and self._hovered is not item:
            self._hovered.set_hover_port(None)
        self._hovered = item
        theme = self.scene.theme
        if target is None or item is None:
            self.line.follow(pos)
            self.line.set_ok(theme.hover)
            self.scene.hide_hint()
            return
        want_output = not self.from_output
        item.set_hover_port((target.port, want_output))
        self.line.follow(item.port_scene_pos(target.port, want_output))
        src, dst = self._pair(target)
        replace = bool(modifiers & Qt.KeyboardModifier.ControlModifier)
        key = (src, dst, replace)
        if key not in self._reasons:
            self._reasons[key] = structural_reason(self.scene.graph, src, dst, replace, ignore=self.moving)
        reason = self._reasons[key]
        if reason:
            self.line.set_ok(theme.refuse_text)
            self.scene.show_hint(reason, pos, ok=False, announce=False)
        else:
            self.line.set_ok(theme.ok_text)
            shape = format_shape(self.scene.shape_of(src))
            self.scene.show_hint(f"{src} → {dst}" + (f"  ({shape})" if shape else ""), pos, ok=True, announce=False)

    def cancel(self) -> None:
        self.scene.set_port_filter(None)
        if self._hovered is not None:
            self._hovered.set_hover_port(None)
        if self.moving is not None and self.moving in self.scene.wire_items:
            self.scene.wire_items[self.moving].show()
        self.scene.removeItem(self.line)
        self.scene.hide_hint()

    def finish(self, pos: QPointF, modifiers: Qt.KeyboardModifier) -> None:
        target = self.target_at(pos)
        self.cancel()
        if target is None:
            if self.moving is not None:
                # A picked-up wire dropped on empty canvas is removed (Blender does this too).
                self.scene.document.push(Disconnect(self.scene.graph, self.moving))
                self.scene.message.emit(f"Disconnected {self.moving}")
            else:
                self.scene.quickAddRequested.emit(pos, self.origin, self.from_output)
            return
        src, dst = self._pair(target)
        if self.moving is not None and Edge(src, dst) == self.moving:
            return  # dropped back where it was
        replace = bool(modifiers & Qt.KeyboardModifier.ControlModifier)
        self.scene.connect_ports(src, dst, replace=replace, moving=self.moving, pos=pos)
