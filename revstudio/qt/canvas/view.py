"""The canvas widget: zoom, pan, keyboard, palette drops and the context menu.

:class:`GraphView` shows a :class:`GraphScene` and offers the API the main
window uses (fit, zoom, selection, and the edits of :mod:`.editing`: clipboard,
align, layout, add, quick add). Mouse gestures on items live in the scene;
view-level gestures (wheel zoom, middle/Space-drag pan, rubber band, drops,
keys) live here. Every edit is one command pushed through the document.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import (
    QAction,
    QCursor,
    QFocusEvent,
    QKeyEvent,
    QKeySequence,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
)
from PySide6.QtWidgets import QGraphicsView, QMenu, QWidget

from revstudio.core.graph import Graph

from . import layout, walk
from .backdrop import draw_empty_hint, draw_grid
from .editing import EditingMixin
from .nudge import nudge_key
from .overview import OverviewWidget
from .quick_add import QuickAddPopup
from .quick_add_actions import QuickAddMixin
from .rename import RenameField, RenameMixin
from .scene import GraphScene
from .theme import FOCUS_FRAME
from .view_zoom import READABLE_ZOOM, ZOOM_MIN, ZOOM_OUT_FLOOR, ZOOM_STEP, ZoomMixin  # noqa: F401
from .wire_item import FAR_WIRES, WireItem, draws_labels, labels_shown

NODE_MIME = "application/x-revstudio-node-type"


class GraphView(ZoomMixin, RenameMixin, EditingMixin, QuickAddMixin, QGraphicsView):
    """A node-editor view of one graph of a document."""

    selectionChangedIds = Signal(list)
    message = Signal(str)
    openGroupRequested = Signal(str)
    findInGroup = Signal(str, str)  # Ctrl+F chose a node inside a group body: (group, node id)
    contextMenuRequested = Signal(object, str)  # (QMenu about to open, node id or "")

    def __init__(self, document: Any, graph: Graph | None = None, parent: QWidget | None = None,
                 dark: bool = True) -> None:
        super().__init__(parent)
        self.document = document
        self._scene = GraphScene(document, graph, dark=dark)
        self.setScene(self._scene)
        self._scene.message.connect(self.message)
        self._scene.selectionChangedIds.connect(self.selectionChangedIds)
        self._scene.openGroupRequested.connect(self.openGroupRequested)
        self._scene.quickAddRequested.connect(self._quick_add_from_wire)
        self._scene.renameRequested.connect(self.start_rename)
        self._scene.emptyChanged.connect(lambda _empty: self.viewport().update())  # the blank-canvas hint
        self.rename_field: RenameField | None = None
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.MinimalViewportUpdate)
        self.setOptimizationFlags(QGraphicsView.OptimizationFlag.DontSavePainterState)
        # The grid only changes with zoom/scroll: a drag frame must not redraw it.
        self.setCacheMode(QGraphicsView.CacheModeFlag.CacheBackground)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setDragMode(QGraphicsView.DragMode.RubberBandDrag)
        self.setRubberBandSelectionMode(Qt.ItemSelectionMode.IntersectsItemShape)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setAcceptDrops(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._space = False
        self._walked: tuple[str | None, str] | None = None  # (came from, reached) of the last Alt+arrow
        self._pan_from: QPoint | None = None
        self._last_scene_pos = QPointF(0, 0)
        self._paste_count = 0
        self._last_paste_at: tuple[float, float] | None = None
        self.popup: QuickAddPopup | None = None
        self._keys = self._key_table()
        # Tabs drop views with deleteLater (no close event): stop observing then, or the
        # scene would keep following the graph for nothing.
        self.destroyed.connect(self._scene.detach)
        self.centerOn(0, 0)
        self.overview = OverviewWidget(self)  # the map in the corner, while the graph does not fit
        # A screen reader reads the painted canvas by this name and description.
        self.setAccessibleName("Canvas")
        self.selectionChangedIds.connect(lambda _ids: self.describe())
        self.describe()

    def scene(self) -> GraphScene:  # type: ignore[override]
        return self._scene

    @property
    def graph(self) -> Graph:
        return self._scene.graph

    def set_theme(self, dark: bool) -> None:
        self._scene.set_theme(dark)
        self.resetCachedContent()  # the cached grid has the old colours
        self.viewport().update()
        self.overview.redraw()

    def closeEvent(self, event: Any) -> None:  # noqa: N802
        self._scene.detach()
        super().closeEvent(event)

    def wheelEvent(self, event: Any) -> None:  # noqa: N802
        steps = event.angleDelta().y() / 120.0
        if not steps:  # some touchpads report pixels only
            steps = event.pixelDelta().y() / 120.0
        if steps:
            self._zoom_by(ZOOM_STEP ** steps, event.position())
        event.accept()

    def mousePressEvent(self, event: Any) -> None:  # noqa: N802
        self.setFocus()
        if event.button() == Qt.MouseButton.MiddleButton or (
                event.button() == Qt.MouseButton.LeftButton and self._space):
            self._pan_from = event.position().toPoint()
            self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
            event.accept()
            return
        shift = event.modifiers() & Qt.KeyboardModifier.ShiftModifier
        if event.button() == Qt.MouseButton.LeftButton and shift \
                and self._scene.node_at(self.mapToScene(event.position().toPoint())) is None:
            # Shift+drag on empty canvas adds a rubber band's nodes to the selection, as Ctrl does
            mods = (event.modifiers() & ~Qt.KeyboardModifier.ShiftModifier) | Qt.KeyboardModifier.ControlModifier
            event = QMouseEvent(event.type(), event.position(), event.globalPosition(), event.button(),
                                event.buttons(), mods)
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: Any) -> None:  # noqa: N802
        self._last_scene_pos = self.mapToScene(event.position().toPoint())
        if self._pan_from is not None:
            delta = event.position().toPoint() - self._pan_from
            self._pan_from = event.position().toPoint()
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() - delta.x())
            self.verticalScrollBar().setValue(self.verticalScrollBar().value() - delta.y())
            event.accept()
            return
        if event.buttons() & Qt.MouseButton.LeftButton:  # a rubber band: its selection, throttled
            with self._scene.held_selection():
                super().mouseMoveEvent(event)
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: Any) -> None:  # noqa: N802
        if self._pan_from is not None and event.button() in (Qt.MouseButton.MiddleButton, Qt.MouseButton.LeftButton):
            self._pan_from = None
            self.viewport().setCursor(Qt.CursorShape.OpenHandCursor if self._space else Qt.CursorShape.ArrowCursor)
            event.accept()
            return
        super().mouseReleaseEvent(event)
        self._scene.flush_selection()

    def drawBackground(self, painter: QPainter, rect: QRectF | QRect) -> None:  # noqa: N802
        draw_grid(painter, QRectF(rect), self._scene.theme, self.zoom())

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        if (self.zoom() < FAR_WIRES) != self._scene.wires_cached:  # zoomed across (before the paint)
            views = [v for v in self._scene.views() if isinstance(v, GraphView)]
            self._scene.cache_wires(bool(views) and all(v.zoom() < FAR_WIRES for v in views))
        if draws_labels(self.zoom()) != self._scene.labels_held:  # (labels drawn from ~64 %)
            self._scene.hold_labels(labels_shown(self._scene))
        super().paintEvent(event)

    def drawForeground(self, painter: QPainter, rect: QRectF | QRect) -> None:  # noqa: N802
        self.overview.follow_view()  # every scroll and zoom repaints: the map's rectangle follows
        if not self._scene.node_items:
            draw_empty_hint(painter, QRectF(self.viewport().rect()), self._scene.theme)
        if self.hasFocus():
            # The keys go to the canvas: say so with a frame, as a focused field shows one.
            painter.save()
            painter.resetTransform()
            painter.setPen(QPen(self._scene.theme.hover, FOCUS_FRAME))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(QRectF(self.viewport().rect()).adjusted(1, 1, -1, -1))
            painter.restore()

    def focusInEvent(self, event: QFocusEvent) -> None:  # noqa: N802
        self.describe()
        super().focusInEvent(event)
        self.viewport().update()

    def describe(self) -> str:
        """The accessible description: what is on the canvas and what is selected."""
        g, ids = self.graph, self.selected_node_ids()
        picked = ", ".join(f"{n} ({g.nodes[n].type})" for n in ids[:5]) + (" …" if len(ids) > 5 else "")
        text = (f"{len(g.nodes)} nodes, {len(g.edges)} wires; "
                + (f"selected: {picked}" if ids else "nothing selected (Ctrl+F finds a node)"))
        self.setAccessibleDescription(text)
        return text

    def focusOutEvent(self, event: QFocusEvent) -> None:  # noqa: N802
        super().focusOutEvent(event)
        self.viewport().update()

    def scrollContentsBy(self, dx: int, dy: int) -> None:  # noqa: N802
        super().scrollContentsBy(dx, dy)
        if not self._scene.node_items:
            # Scrolling blits the old pixels and repaints only the strip it exposed: the hint,
            # fixed to the viewport, would be drawn twice. Repaint it whole.
            self.viewport().update()

    # ---- keyboard --------------------------------------------------------
    def _key_table(self) -> dict[tuple[int, int], Callable[[], object]]:
        K, M = Qt.Key, Qt.KeyboardModifier
        ctrl, shift, none = int(M.ControlModifier.value), int(M.ShiftModifier.value), 0
        alt = int(M.AltModifier.value)
        return {
            (int(K.Key_Delete.value), none): self.delete_selection,
            (int(K.Key_Backspace.value), none): self.delete_selection,
            (int(K.Key_Backspace.value), ctrl): self.delete_and_reconnect,  # (Cmd+Backspace on a Mac)
            (int(K.Key_C.value), ctrl): self.copy,
            (int(K.Key_X.value), ctrl): self.cut,
            (int(K.Key_V.value), ctrl): self.paste,
            (int(K.Key_D.value), ctrl): self.duplicate,
            (int(K.Key_D.value), shift): self.duplicate,  # Blender's duplicate
            (int(K.Key_A.value), ctrl): self.select_all,
            (int(K.Key_F.value), none): self.fit_selection,
            (int(K.Key_Home.value), none): self.fit_all,
            (int(K.Key_Plus.value), none): self.zoom_in,
            (int(K.Key_Plus.value), shift): self.zoom_in,
            (int(K.Key_Equal.value), none): self.zoom_in,
            (int(K.Key_Minus.value), none): self.zoom_out,
            (int(K.Key_0.value), ctrl): self.reset_zoom,
            (int(K.Key_A.value), shift): self._quick_add_at_cursor,
            (int(K.Key_Tab.value), none): self._tab,
            (int(K.Key_L.value), ctrl): lambda: self.auto_layout(False),
            (int(K.Key_L.value), ctrl | shift): lambda: self.auto_layout(True),
            (int(K.Key_Escape.value), none): self._escape,
            **{(int(key.value), alt): partial(self.walk, way) for key, way in
               ((K.Key_Left, "left"), (K.Key_Right, "right"), (K.Key_Up, "up"), (K.Key_Down, "down"))},
        }

    def _action_for(self, event: QKeyEvent) -> Callable[[], object] | None:
        mods = event.modifiers() & (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
                                    | Qt.KeyboardModifier.AltModifier | Qt.KeyboardModifier.MetaModifier)
        return self._keys.get((event.key(), int(mods.value)))

    def event(self, event: Any) -> bool:
        # The view's keys win over window-wide shortcuts while the canvas has focus.
        if event.type() == event.Type.ShortcutOverride and self._action_for(event) is not None:
            event.accept()
            return True
        return super().event(event)

    def focusNextPrevChild(self, next: bool) -> bool:  # noqa: N802, A002
        # Tab belongs to quick add / open group; Shift+Tab leaves the canvas (no keyboard trap)
        return False if next else super().focusNextPrevChild(next)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Space and not event.isAutoRepeat():
            self._space = True
            self.viewport().setCursor(Qt.CursorShape.OpenHandCursor)
            event.accept()
            return
        action = self._action_for(event)
        if action is not None or nudge_key(self, event):
            if action is not None:
                action()
            event.accept()
            return
        super().keyPressEvent(event)

    def keyReleaseEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Space and not event.isAutoRepeat():
            self._space = False
            self._pan_from = None
            self.viewport().setCursor(Qt.CursorShape.ArrowCursor)
            event.accept()
            return
        super().keyReleaseEvent(event)

    def walk(self, direction: str) -> str | None:
        """Alt+arrows: select the node one wire away (see :mod:`.walk`) and keep it in view."""
        ids = self.selected_node_ids()
        current = ids[0] if ids else None
        # Alt+Up / Alt+Down go through the consumers of the node an Alt+Right came from
        came_from = self._walked[0] if self._walked is not None and self._walked[1] == current else None
        found = walk.step(self.graph, current, direction, came_from)
        if found is None:
            self.message.emit(walk.nowhere(self.graph, current, direction, came_from))
            return None
        if direction == "right":
            came_from = current
        elif direction == "left":
            came_from = None
        self._walked = (came_from, found)
        self.select_nodes([found])
        self.message.emit(f"{found} ({self.graph.node(found).type})")
        return found

    def _escape(self) -> None:
        if self._scene.wiring:
            self._scene.cancel_gesture()
        else:
            self._scene.clearSelection()

    def _tab(self) -> None:
        ids = self.selected_node_ids()
        if len(ids) == 1 and self._scene.node_items[ids[0]].display.opens_group:
            self.openGroupRequested.emit(ids[0])
        else:
            self._quick_add_at_cursor()

    def cursor_in_view(self) -> QPointF | None:
        """The scene point under the mouse pointer, if it is over this canvas."""
        local = self.viewport().mapFromGlobal(QCursor.pos())
        if self.viewport().rect().contains(local) and self.isVisible():
            return self.mapToScene(local)
        return None

    def cursor_scene_pos(self) -> QPointF:
        local = self.viewport().mapFromGlobal(QCursor.pos())
        if self.viewport().rect().contains(local):
            return self.mapToScene(local)
        return self.mapToScene(self.viewport().rect().center())

    # ---- selection ---------------------------------------------------------
    def select_nodes(self, ids: list[str]) -> None:
        self._scene.select_only(ids)
        shown = [i for i in ids if i in self._scene.node_items]
        rect = self._scene.nodes_rect(shown) if shown else None
        # only where some of them is off screen: one the view shows (a right-click, Ctrl+G's new node near
        # a fitted graph's edge) scrolled the canvas a few pixels, and a fit then no longer followed a resize
        if rect is not None and not self.mapToScene(self.viewport().rect()).boundingRect().contains(rect):
            self.ensureVisible(rect, 40, 40)

    def selected_node_ids(self) -> list[str]:
        return self._scene.selected_node_ids()

    def center_on_node(self, node_id: str) -> bool:
        """Scroll so that ``node_id`` is in the middle (diagnostics clicks, search)."""
        item = self._scene.node_items.get(node_id)
        if item is None:
            return False
        self.centerOn(item.sceneBoundingRect().center())
        return True

    def reveal_node(self, node_id: str) -> bool:
        """Centre ``node_id`` and zoom in enough to read it (a Problem's click, a search)."""
        item = self._scene.node_items.get(node_id)
        if item is None:
            return False
        self.remember_view()
        if self.zoom() < READABLE_ZOOM:
            self.resetTransform()
            self.scale(READABLE_ZOOM, READABLE_ZOOM)
        self.centerOn(item.sceneBoundingRect().center())
        return True

    def reveal_nodes(self, ids: list[str]) -> bool:
        """Frame every node of ``ids`` on this canvas (a merged Problem's click): centred on them,
        zoomed in to read them where they all fit at that zoom, out as far as needed where not."""
        shown = [i for i in ids if i in self._scene.node_items]
        if len(shown) <= 1:
            return bool(shown) and self.reveal_node(shown[0])
        self.remember_view()
        rect = self._scene.nodes_rect(shown).adjusted(-40, -40, 40, 40)
        size = self.viewport().size()
        fits = min(size.width() / max(rect.width(), 1.0), size.height() / max(rect.height(), 1.0))
        zoom = max(ZOOM_MIN, min(max(self.zoom(), READABLE_ZOOM), fits))
        if zoom != self.zoom():
            self.resetTransform()
            self.scale(zoom, zoom)
        self.centerOn(rect.center())
        return True

    def select_all(self) -> None:
        self._scene.select_only(list(self._scene.node_items))

    # ---- drops from the palette --------------------------------------------
    # Only node types are dropped here; anything else (files, text) is left to the
    # window, which opens project files dropped anywhere on it.
    def dragEnterEvent(self, event: Any) -> None:  # noqa: N802
        if event.mimeData().hasFormat(NODE_MIME):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: Any) -> None:  # noqa: N802
        if event.mimeData().hasFormat(NODE_MIME):
            # a wire under the cursor lights up: dropping there splices the node into it
            self._scene.set_drop_wire(self._scene.wire_at(self.mapToScene(event.position().toPoint())))
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragLeaveEvent(self, event: Any) -> None:  # noqa: N802
        self._scene.set_drop_wire(None)
        event.accept()

    def dropEvent(self, event: Any) -> None:  # noqa: N802
        data = event.mimeData()
        self._scene.set_drop_wire(None)
        if not data.hasFormat(NODE_MIME):
            event.ignore()
            return
        type_id = bytes(data.data(NODE_MIME).data()).decode("utf-8", "replace").strip()
        pos = self.mapToScene(event.position().toPoint())
        wire = self._scene.wire_at(pos)
        new = self.insert_node_on_wire(type_id, wire.edge, pos) if wire else self.add_node_at(type_id, pos)
        if new is not None:
            event.acceptProposedAction()
        else:
            event.ignore()

    # ---- context menu -----------------------------------------------------------
    def build_context_menu(self, scene_pos: QPointF) -> tuple[QMenu, str]:
        item = self._scene.node_at(scene_pos)
        node_id = item.node_id if item is not None else ""
        if item is not None and not item.isSelected():
            self.select_nodes([node_id])
        menu = QMenu(self)

        def add(text: str, slot: Callable[[], Any], shortcut: str = "", enabled: bool = True) -> QAction:
            action = menu.addAction(text)
            action.triggered.connect(lambda _=False: slot())
            if shortcut:
                action.setShortcut(QKeySequence(shortcut))
            action.setEnabled(enabled)
            return action

        has_sel = bool(self.selected_node_ids())
        add("Add Node…", lambda: self.open_quick_add(scene_pos), "Shift+A")
        if item is not None:
            add("Rename Node", lambda: self.start_rename(node_id), "F2")
        if item is not None and item.display.opens_group:
            add("Open Group", lambda: self.openGroupRequested.emit(node_id), "Tab")
        menu.addSeparator()
        add("Cut", self.cut, "Ctrl+X", has_sel)
        add("Copy", self.copy, "Ctrl+C", has_sel)
        add("Paste", self.paste, "Ctrl+V")
        add("Duplicate", self.duplicate, "Ctrl+D", has_sel)
        add("Delete", self.delete_selection, "Del", has_sel or bool(self._scene.selected_edges()))
        add("Delete and Reconnect", self.delete_and_reconnect, "Ctrl+Del", has_sel)
        menu.addSeparator()
        align = menu.addMenu("Align")
        for axis in layout.ALIGN_AXES:  # (named as View > Align names them)
            act = align.addAction(layout.ALIGN_NAMES[axis])
            act.triggered.connect(lambda _=False, a=axis: self.align(a))
        align.addSeparator()
        for axis in ("horizontal", "vertical"):
            act = align.addAction(f"Distribute {axis.title()}ly")
            act.triggered.connect(lambda _=False, a=axis: self.distribute(a))
            act.setEnabled(len(self.selected_node_ids()) > 2)
        align.setEnabled(len(self.selected_node_ids()) > 1)
        add("Layout Selection", lambda: self.auto_layout(True), "Ctrl+Shift+L", len(self.selected_node_ids()) > 1)
        add("Auto Layout", lambda: self.auto_layout(False), "Ctrl+L")
        add("Fit Selection", self.fit_selection, "F", bool(self.selected_node_ids()))
        add("Fit All", self.fit_all, "Home")
        self.contextMenuRequested.emit(menu, node_id)
        return menu, node_id

    def mouseDoubleClickEvent(self, event: Any) -> None:  # noqa: N802
        # Double-click on empty canvas searches for a node to add there (as in ComfyUI).
        pos = self.mapToScene(event.position().toPoint())
        if event.button() == Qt.MouseButton.LeftButton and self._scene.node_at(pos) is None \
                and not any(isinstance(i, WireItem) for i in self._scene.items(pos)):
            self.open_quick_add(pos)
            event.accept()
            return
        super().mouseDoubleClickEvent(event)

    def contextMenuEvent(self, event: Any) -> None:  # noqa: N802
        menu, _ = self.build_context_menu(self.mapToScene(event.pos()))
        menu.exec(event.globalPos())
