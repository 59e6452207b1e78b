"""The overview: a small map of the whole graph in the canvas's corner (as Netron and Blender show).

Cards are drawn as blocks in their category's colour and wires as straight lines into a cached
pixmap, redrawn a moment after an edit (never per frame), so a 1,000-node graph costs nothing while
it is dragged or zoomed; the visible area is a rectangle drawn over it on each paint. A click or
drag in it centres the canvas there. It shows itself only while the graph does not fit the canvas,
and only where View > Overview is on (kept in the settings).

From the keyboard, View > Focus Overview (Ctrl+Shift+O) gives it the keys: the arrows move the view
rectangle a quarter of a screen (Shift, PgUp and PgDn a whole one), Home goes to the graph's Inputs,
End to its Outputs, and Escape, Enter or Ctrl+Shift+O again hand the keys back to the canvas. It
draws the canvas's focus frame while it has them, and a screen reader reads where the view is.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QLineF, QObject, QPointF, QRectF, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QFocusEvent, QKeyEvent, QMouseEvent, QPainter, QPaintEvent, QPen, QPixmap
from PySide6.QtWidgets import QWidget

from .node_item import WIDTH
from .theme import FOCUS_FRAME

SIZE = QSize(240, 150)  # logical px at most; the map takes the graph's shape within it
MIN_SIDE = 60           # px: a very wide (or tall) graph's map is no thinner than this
CORNER_GAP = 12         # px from the canvas's bottom-right corner
INSET = 6.0             # px between the map's frame and the graph
REDRAW_MS = 250         # the map is redrawn this long after the last of a burst of edits
KEY_STEP = 0.25         # an arrow key moves the view this part of its own width or height
FOCUS_KEYS = "Ctrl+Shift+O"  # View > Focus Overview (the window's action; named here for the texts)


class OverviewWidget(QWidget):
    """The map of ``view``'s graph; a child of the view, over its viewport."""

    def __init__(self, view: Any) -> None:
        super().__init__(view)
        self._view = view
        self.wanted = True  # View > Overview: shown (while the graph does not fit) or never
        self._pixmap: QPixmap | None = None
        self._world = QRectF()  # the graph's scene rect the map shows
        self._scale = 1.0
        self._offset = QPointF()
        self._seen = QRectF()   # the visible scene rect last drawn
        self._stale = False     # an edit came while the view was hidden
        self.redraws = 0        # (for tests and the benchmark: how often the map was redrawn)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REDRAW_MS)
        self._timer.timeout.connect(self.redraw)
        document = view.document
        for signal in ("edited", "graphReplaced"):
            if hasattr(document, signal):
                getattr(document, signal).connect(self.schedule)
        self.setFixedSize(SIZE)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip(f"Overview: click or drag to move the canvas there; {FOCUS_KEYS} moves it from the "
                        "keyboard (View > Overview hides it)")
        self.setAccessibleName("Overview")
        # A click keeps the keys on the canvas (Delete still deletes); View > Focus Overview gives them here.
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        view.installEventFilter(self)
        self.hide()
        self.schedule()  # once the view has its graph and size

    # ---- keeping up -------------------------------------------------------
    def schedule(self) -> None:
        """Redraw the map once the edits pause (an edit, an undo, another project): a burst of
        them (typing, held Ctrl+Z) redraws once, after the last."""
        self._timer.start()

    def pending(self) -> bool:
        """A redraw is waiting for the edits to pause."""
        return self._timer.isActive()

    def set_wanted(self, on: bool) -> None:
        self.wanted = on
        self.redraw()

    def redraw(self) -> None:
        """Draw the graph into the cached pixmap and decide whether the map is needed."""
        self._timer.stop()
        if not self._view.isVisible():  # a tab behind another: redrawn when it is shown
            self._stale = True
            return
        self._stale = False
        scene = self._view.scene()
        scene.flush_moves()  # (wires of nodes an undo moved follow them on the next turn)
        cards = card_rects(scene)
        world = QRectF()
        if cards:
            left = min(r.left() for rects in cards.values() for r in rects)
            top = min(r.top() for rects in cards.values() for r in rects)
            right = max(r.right() for rects in cards.values() for r in rects)
            bottom = max(r.bottom() for rects in cards.values() for r in rects)
            world = QRectF(left, top, right - left, bottom - top).adjusted(-40, -40, 40, 40)
        self._world = world
        self._pixmap = None
        if self.wanted and not self._world.isEmpty():
            self.setFixedSize(map_size(self._world))
            self._pixmap = self._paint_map(scene, cards)
            self.redraws += 1
        self.follow_view(force=True)

    def _paint_map(self, scene: Any, cards: dict[tuple[str, bool], list[QRectF]]) -> QPixmap:
        theme = scene.theme
        ratio = self.devicePixelRatioF() or 1.0
        size = self.size()
        pixmap = QPixmap(size * ratio)
        pixmap.setDevicePixelRatio(ratio)
        pixmap.fill(Qt.GlobalColor.transparent)
        room = QRectF(0, 0, size.width(), size.height()).adjusted(INSET, INSET, -INSET, -INSET)
        self._scale = min(room.width() / self._world.width(), room.height() / self._world.height())
        self._offset = QPointF(room.center().x() - self._world.center().x() * self._scale,
                               room.center().y() - self._world.center().y() * self._scale)
        painter = QPainter(pixmap)
        painter.translate(self._offset)
        painter.scale(self._scale, self._scale)
        wire = QColor(theme.wire)
        wire.setAlpha(150)
        pen = QPen(wire, 1.0)
        pen.setCosmetic(True)
        painter.setPen(pen)
        painter.drawLines([QLineF(*item.ends()) for item in scene.wire_items.values()])
        painter.setPen(Qt.PenStyle.NoPen)
        for (category, known), rects in cards.items():  # one brush and one call per colour
            painter.setBrush(theme.category_color(category) if known else theme.error)
            painter.drawRects(rects)
        painter.end()
        return pixmap

    def _visible(self) -> QRectF:
        return self._view.mapToScene(self._view.viewport().rect()).boundingRect()

    def follow_view(self, force: bool = False) -> None:
        """After a scroll or zoom (the view calls this as it paints): show or hide the map, and
        move its rectangle. Cheap: two rectangles compared unless the view moved."""
        seen = self._visible()
        if seen == self._seen and not force:
            return
        self._seen = seen
        need = self._pixmap is not None and not seen.contains(self._world.adjusted(40, 40, -40, -40))
        if need != self.isVisible():
            if not need and self.hasFocus():  # everything came into view: the keys go back to the canvas
                self._view.setFocus(Qt.FocusReason.OtherFocusReason)
            self.setVisible(need)
        if need:
            self._place()
            self.update()
            self.setAccessibleDescription(self.describe())

    def _place(self) -> None:
        port = self._view.viewport().geometry()
        self.move(port.right() - self.width() - CORNER_GAP, port.bottom() - self.height() - CORNER_GAP)
        self.raise_()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if watched is self._view and event.type() == QEvent.Type.Resize:
            self._place()
        elif watched is self._view and event.type() == QEvent.Type.Show and self._stale:
            self.schedule()
        return False

    # ---- the map ------------------------------------------------------------
    def to_scene(self, pos: QPointF) -> QPointF:
        """The scene point under ``pos`` (widget px)."""
        return (pos - self._offset) / self._scale

    def to_map(self, point: QPointF) -> QPointF:
        return point * self._scale + self._offset

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt API
        theme = self._view.scene().theme
        painter = QPainter(self)
        back = QColor(theme.background)
        back.setAlpha(235)
        painter.fillRect(self.rect(), back)
        if self._pixmap is not None:
            painter.drawPixmap(0, 0, self._pixmap)
        seen = self._visible()
        frame = QRectF(self.to_map(seen.topLeft()), self.to_map(seen.bottomRight()))
        frame = frame.intersected(QRectF(self.rect()).adjusted(1, 1, -1, -1))
        fill = QColor(theme.selection)
        fill.setAlpha(40)
        painter.setBrush(fill)
        painter.setPen(QPen(theme.selection, 1.5))
        painter.drawRect(frame)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        if self.hasFocus():  # the keys are here: the canvas's focus frame, around the map
            painter.setPen(QPen(theme.hover, FOCUS_FRAME))
            painter.drawRect(QRectF(self.rect()).adjusted(1, 1, -1, -1))
        else:
            painter.setPen(QPen(theme.node_border, 1.0))
            painter.drawRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5))
        painter.end()

    # ---- the keyboard ---------------------------------------------------------
    def take_focus(self) -> bool:
        """Give the map the keys (View > Focus Overview); False where it is not shown (off, or the
        whole graph is in view)."""
        if self.pending() or self._stale:
            self.redraw()
        self.follow_view(force=True)
        if not self.isVisible():
            return False
        self.setFocus(Qt.FocusReason.ShortcutFocusReason)
        return True

    def describe(self) -> str:
        """Where the view is on the graph, in words (the accessible description)."""
        seen, world = self._visible(), self._world
        if world.isEmpty():
            return "Overview of an empty graph"

        def span(lo: float, hi: float, start: float, length: float) -> str:
            a = round(100 * max(0.0, min(1.0, (lo - start) / length)))
            b = round(100 * max(0.0, min(1.0, (hi - start) / length)))
            return f"{a}–{b} %"

        across = span(seen.left(), seen.right(), world.left(), world.width())
        down = span(seen.top(), seen.bottom(), world.top(), world.height())
        return (f"The canvas shows {across} of the graph across and {down} down. Arrow keys move it "
                "(Shift a screen), Home goes to the Inputs, End to the Outputs, Escape back to the canvas")

    def pan(self, dx: float, dy: float) -> None:
        """Move the view by (dx, dy) of its own width and height, keeping it on the graph along
        the axis it moves (a graph that fits along the other is left as the view shows it)."""
        seen, world = self._visible(), self._world

        def moved(centre: float, step: float, lo: float, hi: float, half: float) -> float:
            if not step:
                return centre
            if hi - lo <= 2 * half:
                return (lo + hi) / 2
            return min(max(centre + step, lo + half), hi - half)

        centre = seen.center()
        self._view.centerOn(QPointF(
            moved(centre.x(), dx * seen.width(), world.left(), world.right(), seen.width() / 2),
            moved(centre.y(), dy * seen.height(), world.top(), world.bottom(), seen.height() / 2)))
        self.follow_view()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt API
        key, K = event.key(), Qt.Key
        page = 1.0 if event.modifiers() & Qt.KeyboardModifier.ShiftModifier else KEY_STEP
        moves = {K.Key_Left: (-page, 0.0), K.Key_Right: (page, 0.0), K.Key_Up: (0.0, -page),
                 K.Key_Down: (0.0, page), K.Key_PageUp: (0.0, -1.0), K.Key_PageDown: (0.0, 1.0)}
        if key in moves:
            self.pan(*moves[K(key)])
        elif key == K.Key_Home:
            self._view.show_start()
            self.follow_view()
        elif key == K.Key_End:
            self._view.show_end()
            self.follow_view()
        elif key in (K.Key_Escape, K.Key_Return, K.Key_Enter):
            self._view.setFocus(Qt.FocusReason.OtherFocusReason)
        else:
            super().keyPressEvent(event)  # (ignored: the canvas's keys, as its child)
            return
        event.accept()

    def focusInEvent(self, event: QFocusEvent) -> None:  # noqa: N802 - Qt API
        super().focusInEvent(event)
        self.setAccessibleDescription(self.describe())
        self.update()

    def focusOutEvent(self, event: QFocusEvent) -> None:  # noqa: N802 - Qt API
        super().focusOutEvent(event)
        self.update()

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        if event.button() == Qt.MouseButton.LeftButton:
            self._view.centerOn(self.to_scene(event.position()))
            self.follow_view()
        event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        if event.buttons() & Qt.MouseButton.LeftButton:
            self._view.centerOn(self.to_scene(event.position()))
            self.follow_view()
        event.accept()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        event.accept()

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        self.mousePressEvent(event)  # (not the canvas's double-click: quick add under the map)


def map_size(world: QRectF) -> QSize:
    """The map's size for a graph spanning ``world``: its shape, within :data:`SIZE`."""
    aspect = world.width() / max(world.height(), 1.0)
    width, height = float(SIZE.width()), SIZE.width() / aspect
    if height > SIZE.height():
        width, height = SIZE.height() * aspect, SIZE.height()
    return QSize(round(max(width, MIN_SIDE)), round(max(height, MIN_SIDE)))


def card_rects(scene: Any) -> dict[tuple[str, bool], list[QRectF]]:
    """Each card's scene rect (without ports and outline), by (category, known type): its colour."""
    cards: dict[tuple[str, bool], list[QRectF]] = {}
    for item in scene.node_items.values():
        pos, display = item.pos(), item.display
        key = (display.category, display.known_type)
        cards.setdefault(key, []).append(QRectF(pos.x(), pos.y(), WIDTH, item.height))
    return cards
