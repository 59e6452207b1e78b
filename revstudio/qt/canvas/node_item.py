"""The node item: a rounded card with a coloured header, port dots, key params and counts.

A :class:`NodeItem` draws one graph node. It holds only what it needs to paint
(a :class:`NodeDisplay` and the node's diagnostics); the graph stays the truth.
Painting is cached per device (1,000-node scenes stay fast) and simplified when
zoomed far out. Port positions are computed, not separate items, to keep the
item count low.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsRectItem, QStyleOptionGraphicsItem, QWidget

from revstudio.core.card import HEADER, LINE, PAD, ROW, WIDTH, card_height
from revstudio.qt.theme import colors as theme_colours

from .card_text import LINE_GAP, CardText, card_text
from .card_text import current as card_fonts
from .display import NodeDisplay

if TYPE_CHECKING:  # pragma: no cover
    from .scene import GraphScene

# (WIDTH, HEADER, ROW, LINE, PAD: a card's geometry, core.card's, which revstudio merge measures with)
PORT_RADIUS = 5.0
OUTLINE = PORT_RADIUS + 5.0  # a card's bounds reach this far past it: the port dots and the selection outline
PORT_HIT = 11.0      # generous hit radius: ports are small targets
CORNER = 7.0
FAR = 0.35           # below this zoom a node is drawn as a block (level of detail)
# Words drawn smaller than this on screen (points at the view's zoom; 6 px) read as dots: the far
# blocks' titles and the wires' shape labels keep to it. A card's own words keep to the larger
# readable size of card_text, which follows Preferences > Text size.
MIN_TEXT_PT = 4.5

_TITLE_FONT = card_text(100).title  # (the far blocks' names are measured at 100 %)
_BODY_FONT = card_text(100).body
# The zoom from which a card shows its port names and parameter lines at 100 % text (0.67); below it,
# down to FAR, a bigger, simplified title (card_text.py); at a larger text size, further in.
WORDS_ZOOM = card_text(100).words_zoom
_NO_PEN = QPen(Qt.PenStyle.NoPen)


class NodeItem(QGraphicsRectItem):
    """One node on the canvas; ``node_id`` links it to the graph.

    A rect item only so that Qt holds its bounds (the card and the room for its port dots and
    outline, ``rect()``, drawn by :meth:`paint`, never by the rect item's own paint): a repaint
    of a lane's band asks thousands of items for their bounds, each a call into Python when an
    item answers ``boundingRect`` itself."""

    def __init__(self, node_id: str, display: NodeDisplay) -> None:
        super().__init__()
        self.setPen(_NO_PEN)  # (the rect item's bounds are its rect alone)
        self.node_id = node_id
        self.display = display
        # What the card was last drawn from by a re-check (GraphScene._card_may_change); None: unknown
        self.shown_for: tuple[Any, ...] | None = None
        self.errors: tuple[str, ...] = ()
        self.warnings: tuple[str, ...] = ()
        self.error_ports: frozenset[str] = frozenset()
        self.hover_port: tuple[str, bool] | None = None
        self._tooltip = ""
        self._memory_tip = ""
        self._hovered = False
        self._height = self._compute_height()
        self.setRect(self._compute_bounds())
        # No ItemSendsGeometryChanges: the scene moves wires itself (drag frames, model
        # moves), which spares a Python itemChange call for every change of every item.
        self.setFlags(QGraphicsItem.GraphicsItemFlag.ItemIsMovable | QGraphicsItem.GraphicsItemFlag.ItemIsSelectable)
        self.setAcceptHoverEvents(True)
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.setZValue(1.0)
        self._update_tooltip()

    # ---- geometry ----------------------------------------------------
    def _compute_height(self) -> float:
        d = self.display
        return card_height(len(d.inputs), len(d.outputs), len(d.lines) + len(d.footer))

    def _compute_bounds(self) -> QRectF:
        m = OUTLINE
        return QRectF(-m, -m, WIDTH + 2 * m, self._height + 2 * m)

    @property
    def height(self) -> float:
        return self._height

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        path.addRoundedRect(QRectF(-PORT_RADIUS, 0, WIDTH + 2 * PORT_RADIUS, self._height), CORNER, CORNER)
        return path

    def port_local_pos(self, port: str, is_output: bool) -> QPointF:
        ports = self.display.outputs if is_output else self.display.inputs
        try:
            i = ports.index(port)
        except ValueError:
            i = 0  # a port that vanished (param edit): anchor at the first row
        y = HEADER + PAD + i * ROW + ROW / 2
        return QPointF(WIDTH if is_output else 0.0, y)

    def port_scene_pos(self, port: str, is_output: bool) -> QPointF:
        return self.pos() + self.port_local_pos(port, is_output)  # nodes are never rotated or scaled

    def port_at(self, local: QPointF, radius: float = PORT_HIT) -> tuple[str, bool] | None:
        """The port (name, is_output) whose dot is under ``local``, if any."""
        best: tuple[float, tuple[str, bool]] | None = None
        for is_output, ports in ((False, self.display.inputs), (True, self.display.outputs)):
            for port in ports:
                p = self.port_local_pos(port, is_output)
                dist = max(abs(p.x() - local.x()) * 0.6, abs(p.y() - local.y()))
                if abs(p.x() - local.x()) <= radius * 1.6 and dist <= radius and (best is None or dist < best[0]):
                    best = (dist, (port, is_output))
        return best[1] if best else None

    def nearest_port(self, local: QPointF, is_output: bool) -> str | None:
        """The port on one side closest in height to ``local`` (drop anywhere on a node)."""
        ports = self.display.outputs if is_output else self.display.inputs
        if not ports:
            return None
        return min(ports, key=lambda p: abs(self.port_local_pos(p, is_output).y() - local.y()))

    # ---- state -------------------------------------------------------
    def set_display(self, display: NodeDisplay) -> bool:
        """Adopt new display facts; returns True if the port layout changed."""
        if display == self.display:
            return False
        ports_changed = (display.inputs, display.outputs, display.lines, display.footer) != (
            self.display.inputs, self.display.outputs, self.display.lines, self.display.footer)
        self.display = display
        self._height = self._compute_height()
        self.setRect(self._compute_bounds())  # (a geometry change only where the height changed)
        self._update_tooltip()
        self.update()
        return ports_changed

    def set_diagnostics(self, errors: tuple[str, ...], warnings: tuple[str, ...], error_ports: frozenset[str]) -> None:
        if (errors, warnings, error_ports) == (self.errors, self.warnings, self.error_ports):
            return
        self.errors, self.warnings, self.error_ports = errors, warnings, error_ports
        self._update_tooltip()
        self.update()

    def _update_tooltip(self) -> None:
        d = self.display
        parts = [f"<b>{d.title}</b> <span style='color:gray'>({self.node_id})</span>"]
        for message in self.errors:
            parts.append(f"<span style='color:{theme_colours().error}'>error: {_escape(message)}</span>")
        for message in self.warnings:
            parts.append(f"<span style='color:{theme_colours().warning}'>warning: {_escape(message)}</span>")
        parts.extend(_escape(line) for line in d.footer)
        self._tooltip = "<br>".join(parts)
        if self.hover_port is None:
            self.setToolTip(self._tooltip)

    def set_hover_port(self, port: tuple[str, bool] | None) -> None:
        """Highlight a port; its tooltip says what flows through it."""
        if port == self.hover_port:
            return
        self.hover_port = port
        scene = self.scene()
        if port is not None and scene is not None:
            self.setToolTip(scene.port_tooltip(self.node_id, port[0], port[1]))  # type: ignore[attr-defined]
        else:
            self.setToolTip(self._tooltip + self._memory_tip)
        self.update()

    # ---- events ------------------------------------------------------
    def hoverEnterEvent(self, event: Any) -> None:  # noqa: N802
        self._hovered = True
        # the memory lines are worded on demand: cheap per hover, costly per edit for every node
        scene = self.scene()
        memory = getattr(scene, "memory_tooltip", None)
        self._memory_tip = memory(self.node_id) if memory is not None else ""
        if self.hover_port is None:
            self.setToolTip(self._tooltip + self._memory_tip)
        self.update()
        super().hoverEnterEvent(event)

    def hoverMoveEvent(self, event: Any) -> None:  # noqa: N802
        self.set_hover_port(self.port_at(event.pos()))
        super().hoverMoveEvent(event)

    def hoverLeaveEvent(self, event: Any) -> None:  # noqa: N802
        self._hovered = False
        self.set_hover_port(None)
        self.update()
        super().hoverLeaveEvent(event)

    def mouseDoubleClickEvent(self, event: Any) -> None:  # noqa: N802
        scene: GraphScene | None = self.scene()  # type: ignore[assignment]
        if scene is not None and event.pos().y() <= HEADER:
            scene.renameRequested.emit(self.node_id)  # double-click on the header: rename in place
            event.accept()
            return
        if scene is not None and self.display.opens_group:
            scene.openGroupRequested.emit(self.node_id)
            event.accept()
            return
        super().mouseDoubleClickEvent(event)

    # ---- painting ----------------------------------------------------
    def _paint_far(self, painter: QPainter, theme: Any, header_color: QColor, lod: float) -> None:
        """Zoomed out: a block in the type's colour with the type name as large as reads well,
        the selection as a thick outline and a broken input as a red bar, in screen pixels."""
        d = self.display
        rect = QRectF(0, 0, WIDTH, self._height)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        painter.fillRect(rect, header_color)
        painter.fillRect(QRectF(0, HEADER, WIDTH, self._height - HEADER), theme.node_body)
        painter.fillRect(QRectF(0, 0, WIDTH, HEADER), header_color)
        title, size = far_title(d.title, self._height, lod)
        if size * lod >= MIN_TEXT_PT:  # too small to read: the coloured block alone says enough
            font = QFont(_TITLE_FONT)
            font.setPointSizeF(size)
            painter.setFont(font)
            painter.setPen(theme.node_text)
            painter.drawText(rect.adjusted(4, 2, -4, -2), Qt.AlignmentFlag.AlignCenter, title)
        if self.error_ports or self.errors:
            bar = QRectF(0, 0, min(max(8.0, 6.0 / lod), WIDTH * 0.25), self._height)
            painter.fillRect(bar, theme.error)  # a broken input: a red bar along the inputs
        pen = None
        if self.errors:
            pen = QPen(theme.error, 4.0)
        elif self.isSelected():
            pen = QPen(theme.selection, 4.0)
        elif self.warnings:
            pen = QPen(theme.warning, 2.5)
            pen.setStyle(Qt.PenStyle.DashLine)  # (the selection's hue: solid would read as selected)
        if pen is not None:
            pen.setCosmetic(True)  # screen pixels: visible at any zoom
            painter.setPen(pen)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            inset = min(2.0 / max(lod, 1e-3), WIDTH / 4, self._height / 4)  # inside the card: within its bounds
            painter.drawRect(rect.adjusted(inset, inset, -inset, -inset))
            if self.isSelected() and self.errors:  # both: the selection inside the red
                inner = QPen(theme.selection, 3.0)
                inner.setCosmetic(True)
                painter.setPen(inner)
                painter.drawRect(rect.adjusted(inset * 3, inset * 3, -inset * 3, -inset * 3))

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        scene = self.scene()
        theme = scene.theme  # type: ignore[attr-defined]
        d = self.display
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        header_color = theme.category_color(d.category) if d.known_type else theme.error
        if lod < FAR:  # (first: a far card draws no outline, and ~200 of them are redrawn after a lane's edit)
            self._paint_far(painter, theme, header_color, lod)
            return
        rect = QRectF(0, 0, WIDTH, self._height)

        outline = QPen(theme.node_border, 1.0)
        if self.errors:
            outline = QPen(theme.error, 2.5)
        elif self.isSelected():
            outline = QPen(theme.selection, 2.0)
        elif self.warnings:
            # dashed: the warning amber is the selection's hue, and a solid outline read as selected
            outline = QPen(theme.warning, 2.0)
            outline.setStyle(Qt.PenStyle.DashLine)
        elif self._hovered:
            outline = QPen(theme.hover, 1.5)
        if self.isSelected() and self.errors:
            outline.setStyle(Qt.PenStyle.DashLine)

        ct = card_fonts()
        words = lod >= ct.words_zoom  # else the simplified card: a bigger title, no small words
        band, big = (HEADER, 0.0) if words else self._simplified(ct, lod)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        body = QPainterPath()
        body.addRoundedRect(rect, CORNER, CORNER)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(theme.node_body))
        painter.drawPath(body)
        header = QPainterPath()
        header.addRoundedRect(QRectF(0, 0, WIDTH, band + CORNER), CORNER, CORNER)
        header = header.intersected(_rect_path(QRectF(0, 0, WIDTH, band)))
        painter.setBrush(QBrush(header_color))
        painter.drawPath(header)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(outline)
        painter.drawPath(body)

        painter.setPen(theme.node_text)
        if words:  # title and id in the header
            painter.setFont(ct.title)
            title = ct.title_metrics.elidedText(d.title, Qt.TextElideMode.ElideRight, WIDTH * 0.55)
            painter.drawText(QRectF(8, 0, WIDTH - 16, HEADER),
                             Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, title)
            painter.setFont(ct.body)
            ident = elide_id(self.node_id, id_room(ct.title_metrics.horizontalAdvance(title)), ct)
            painter.drawText(QRectF(8, 0, WIDTH - 16, HEADER),
                             Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, ident)
        elif big:  # the type across the taller header, the id under it where the card has room
            font, metrics = _sized(True, big)
            painter.setFont(font)
            title = metrics.elidedText(d.title, Qt.TextElideMode.ElideRight, WIDTH - 12)
            painter.drawText(QRectF(6, 0, WIDTH - 12, band), Qt.AlignmentFlag.AlignCenter, title)
            small = ct.readable_pt / lod
            if band + small * 4 / 3 * LINE_GAP <= self._height - PAD / 2:
                font, metrics = _sized(False, small)
                painter.setFont(font)
                painter.setPen(theme.node_subtext)
                ident = metrics.elidedText(self.node_id, Qt.TextElideMode.ElideMiddle, WIDTH - 12)
                painter.drawText(QRectF(6, band, WIDTH - 12, small * 4 / 3 * LINE_GAP),
                                 Qt.AlignmentFlag.AlignCenter, ident)

        # ports (while a wire is drawn: a ring on those that can take it, dim the rest)
        port_state = getattr(scene, "port_state", None)
        for is_output, ports in ((False, d.inputs), (True, d.outputs)):
            for port in ports:
                p = self.port_local_pos(port, is_output)
                hovered = self.hover_port == (port, is_output)
                color = QColor(theme.port_out if is_output else theme.port_in)
                if not is_output and port in self.error_ports:
                    color = QColor(theme.error)
                state = port_state(self.node_id, port, is_output) if port_state is not None else None
                if state == "no":
                    color.setAlpha(70)
                elif state == "ok":
                    painter.setPen(QPen(theme.ok_text, 1.5))
                    painter.setBrush(Qt.BrushStyle.NoBrush)
                    painter.drawEllipse(p, PORT_RADIUS + 3.5, PORT_RADIUS + 3.5)
                painter.setPen(QPen(theme.node_border, 1.0))
                painter.setBrush(QBrush(theme.hover if hovered else color))
                r = PORT_RADIUS + (1.5 if hovered else 0.0)
                painter.drawEllipse(p, r, r)
                if not words:
                    continue
                painter.setPen(theme.node_subtext)
                label_rect = QRectF(p.x() + 9, p.y() - ROW / 2, WIDTH / 2 - 12, ROW)
                align = Qt.AlignmentFlag.AlignLeft
                if is_output:
                    label_rect = QRectF(WIDTH / 2 + 3, p.y() - ROW / 2, WIDTH / 2 - 12, ROW)
                    align = Qt.AlignmentFlag.AlignRight
                painter.drawText(label_rect, align | Qt.AlignmentFlag.AlignVCenter, port)

        # key params and footer
        if not words:
            return
        y = HEADER + PAD + max(len(d.inputs), len(d.outputs), 1) * ROW
        painter.setFont(ct.body)
        painter.setPen(theme.node_text)
        for line in d.lines:
            text = ct.body_metrics.elidedText(line, Qt.TextElideMode.ElideRight, WIDTH - 16)
            painter.drawText(QRectF(8, y, WIDTH - 16, LINE), Qt.AlignmentFlag.AlignVCenter, text)
            y += LINE
        painter.setPen(theme.node_subtext)
        for line in d.footer:
            text = ct.body_metrics.elidedText(line, Qt.TextElideMode.ElideRight, WIDTH - 16)
            painter.drawText(QRectF(8, y, WIDTH - 16, LINE), Qt.AlignmentFlag.AlignVCenter, text)
            y += LINE

    def _simplified(self, ct: CardText, lod: float) -> tuple[float, float]:
        """(header height, title size in scene points; 0: none) of the simplified card at ``lod``:
        the title ``ct.big_pt`` on screen, in a header grown to hold it, as far as the card does."""
        size = max(ct.title.pointSizeF(), ct.big_pt / lod)
        band = min(self._height, max(HEADER, size * 4 / 3 * LINE_GAP))
        size = min(size, band / LINE_GAP * 0.75)
        return band, (size if size * lod >= ct.readable_pt - 1e-6 else 0.0)


def id_room(title_width: float) -> float:
    """The header's width for the id beside a title ``title_width`` wide: what the title leaves (a
    short "Conv" leaves room for "l0b37_g_conv2" whole), never less than 40 % of the card."""
    return max(WIDTH * 0.4, WIDTH - 16 - title_width - 10)


def elide_id(node_id: str, room: float = WIDTH * 0.4, text: CardText | None = None) -> str:
    """The id as the header shows it in ``room`` px (in ``text``'s body font, 100 %'s by default): its
    start and end say the most ("block0_…_conv1"), so a long one loses its middle, never its start."""
    metrics = (text or card_text(100)).body_metrics
    return metrics.elidedText(node_id, Qt.TextElideMode.ElideMiddle, room)


@functools.lru_cache(maxsize=256)  # the simplified cards of one zoom share a size
def _sized(bold: bool, points: float) -> tuple[QFont, QFontMetricsF]:
    """The card font (the title's where ``bold``) at ``points`` scene points, and its metrics."""
    font = QFont(_TITLE_FONT if bold else _BODY_FONT)
    font.setPointSizeF(points)
    return font, QFontMetricsF(font)


def _rect_path(rect: QRectF) -> QPainterPath:
    path = QPainterPath()
    path.addRect(rect)
    return path


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@functools.lru_cache(maxsize=1024)  # every card of a far-out view asks at the same zoom: one measure per name
def far_title(name: str, height: float, lod: float) -> tuple[str, float]:
    """(text, point size in scene units) of a card's name zoomed out to ``lod``.

    The name as large as fits the card, up to about 10 pt on screen. A name that would
    shrink below 6 pt keeps 6 pt and is cut with "…" while four letters or more survive
    (sizes then stay even from card to card); further out, its first letters ("Spl.").
    """
    metrics = QFontMetricsF(_TITLE_FONT)

    def fitting(text: str) -> float:
        # 0.8: glyphs scaled this far run wider than their metrics say
        return 0.8 * _TITLE_FONT.pointSizeF() * (WIDTH - 10) / (metrics.horizontalAdvance(text) or 1.0)

    cap = min(10.0 / lod, (height - 4) * 0.55)
    size = min(max(fitting(name), 6.0 / lod), cap)
    if fitting(name) >= size:
        return name, size
    if len(name) <= 4:
        return name, fitting(name)  # a short name whole, a little smaller
    font = QFont(_TITLE_FONT)
    font.setPointSizeF(size)
    cut = QFontMetricsF(font).elidedText(name, Qt.TextElideMode.ElideRight, 0.8 * (WIDTH - 8))
    if len(cut.rstrip("…")) >= 4:
        return cut, size
    stub = _stub(name)
    return stub, min(fitting(stub), cap)


@functools.lru_cache(maxsize=512)  # painted per card per frame; the catalog is fixed once loaded
def _stub(name: str) -> str:
    """The shortest start of ``name``, three letters or more, that starts no other node type's
    name, and "." ("Act.", but "Conc." where "Con." would also read as Conv)."""
    from revstudio.core.spec import registry

    others = [t for t in {s.display_name or s.type_id for s in registry} if t != name]
    for k in range(3, len(name)):
        if not any(o.startswith(name[:k]) for o in others):
            return name[:k] + "."
    return name
