"""Wires: smooth bezier curves between ports, labelled with the live tensor shape.

A :class:`WireItem` stands for one graph edge; it recomputes its path only when
one of its two nodes moves (the scene calls :meth:`WireItem.update_path` for the
moved node's edges alone). The path is kept relative to its output port, so a
wire whose two ends move together (a dragged selection) is only translated. :class:`DragWire` is the temporary curve that follows
the cursor while a connection is being drawn.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QFont, QFontMetricsF, QPainter, QPainterPath, QPainterPathStroker, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QStyleOptionGraphicsItem,
    QWidget,
)

from revstudio.core.graph import Edge
from revstudio.qt.canvas.node_item import MIN_TEXT_PT

_LABEL_FONT = QFont()
_LABEL_FONT.setPointSizeF(7.0)
_LABEL_PT = _LABEL_FONT.pointSizeF()
_LABEL_METRICS: QFontMetricsF | None = None
_LABEL_WIDTHS: dict[str, float] = {}  # shape texts repeat a lot; measuring them is not free


LONG = 420.0   # a wire longer than this crosses other columns of nodes
BEND = 80.0    # ... so it runs level from its output and bends only in the last gap


def is_long(delta: QPointF) -> bool:
    return delta.x() > LONG and abs(delta.y()) > 1.0


def wire_path(p1: QPointF, p2: QPointF) -> QPainterPath:
    """A horizontal-tangent bezier from an output (left) to an input (right).

    A long wire (a skip connection) keeps its output's height and bends just
    before its input: the auto layout keeps that row free of nodes, so the wire
    does not run behind the nodes it passes, as a middle bend would.
    """
    path = QPainterPath(p1)
    if is_long(p2 - p1):
        start = QPointF(p2.x() - BEND, p1.y())
        path.lineTo(start)
        path.cubicTo(QPointF(p2.x() - BEND / 2, p1.y()), QPointF(p2.x() - BEND / 2, p2.y()), p2)
        return path
    dx = max(40.0, abs(p2.x() - p1.x()) * 0.5)
    path.cubicTo(QPointF(p1.x() + dx, p1.y()), QPointF(p2.x() - dx, p2.y()), p2)
    return path


def _metrics() -> QFontMetricsF:
    global _LABEL_METRICS
    if _LABEL_METRICS is None:
        _LABEL_METRICS = QFontMetricsF(_LABEL_FONT)
    return _LABEL_METRICS


_ANTIALIASING = QPainter.RenderHint.Antialiasing
_NO_BRUSH = Qt.BrushStyle.NoBrush
# (id of the theme, invalid, selected, hovered, far) -> (that theme, the pen)
_PENS: dict[tuple[int, bool, bool, bool, bool], tuple[Any, QPen]] = {}


def _pen(theme: Any, invalid: bool, selected: bool, hovered: bool, far: bool) -> QPen:
    """The pen a wire of this look draws its curve with (cosmetic far out: screen pixels)."""
    color = theme.wire_selected if selected else theme.hover if hovered else \
        theme.wire_invalid if invalid else theme.wire
    pen = QPen(color, 2.6 if (selected or hovered) else 1.8)
    pen.setCosmetic(far)
    return pen


# Below this zoom (where cards are drawn as blocks) wires are painted from pixmaps, as cards are:
# every wire is in view, and an edit that ends a lane's region repaints its whole box, which with a
# Python paint per wire was most of the edit's first paint. Nearer, few wires are in view and a
# drag, zoom or scroll would redraw each one's pixmap: they are painted directly.
FAR_WIRES = 0.35
PLACED_KEPT = 4  # label placements a wire keeps for its current curve (texts it may show again)


def labels_shown(scene: Any) -> bool:
    """Whether a view of ``scene`` is zoomed in enough to draw wire labels."""
    return scene is None or any(draws_labels(view.transform().m11()) for view in scene.views())


def draws_labels(zoom: float) -> bool:
    """Whether a view at ``zoom`` draws wire labels (their words as large as a card's smallest)."""
    return _LABEL_PT * zoom >= MIN_TEXT_PT


_NO_PEN = QPen(Qt.PenStyle.NoPen)


class WireItem(QGraphicsRectItem):
    """One edge, drawn between the output and input port positions.

    A rect item only so that Qt holds its bounds (``rect()``; the curve and, where a view draws
    labels, the label: see :meth:`hold_label`), drawn by :meth:`paint`: a repaint of a lane's band
    asked each of its ~1,300 wires for its bounds several times, a call into Python each."""

    def __init__(self, edge: Edge, cached: bool = False, labels: bool = True) -> None:
        super().__init__()
        self.setPen(_NO_PEN)  # (the rect item's bounds are its rect alone)
        self.edge = edge
        # whether the bounds (and the hit area) hold the label: only where a view draws labels, so
        # that far out a label that comes or goes (a lane's ~650 on an unwire) changes no geometry
        self._holds_label = labels
        self.label = ""
        self.invalid = False
        self._path = QPainterPath()
        self._delta: QPointF | None = None  # input port minus output port
        self._label_rect = QRectF()
        self._with_label = QRectF()  # the curve's bounds and the label's rect
        self._path_bounds = QRectF()  # the curve's own bounds and margin, kept with the path
        self._label_fits = False
        # (label rect, bounds, fits) per label text placed on the current curve: a re-check that
        # takes a lane's shapes away ("") and the next that brings them back (a rewire, an undo)
        # find the ~650 labels where they were, not measured and placed again
        self._placed: dict[str, tuple[QRectF, QRectF, bool]] = {}
        self._tip_head = f"{edge.src} → {edge.dst}"  # (a wire without a shape names its ends too)
        self.setToolTip(self._tip_head)
        self._shape: QPainterPath | None = None  # the hit area, kept until the path or label changes
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, True)
        self.setAcceptHoverEvents(True)
        self._hovered = False
        self.setZValue(0.0)
        self.set_cached(cached)

    def update_path(self, p1: QPointF, p2: QPointF) -> None:
        """Run from output port ``p1`` to input port ``p2`` (scene coordinates)."""
        delta = p2 - p1
        if delta != self._delta:
            self._delta = delta
            self._path = wire_path(QPointF(0.0, 0.0), delta)
            self._path_bounds = self._path.boundingRect().adjusted(-3, -3, 3, 3)
            self._placed = {}  # (placed on the old curve)
            self._use_label_place()
            self.update()  # (a new geometry alone keeps the pixmap of the old curve)
        self.setPos(p1)

    def set_cached(self, cached: bool) -> None:
        """Painted from a pixmap per view (far out: see FAR_WIRES), redrawn on update() (a new
        curve, label or colour, hover, selection, theme), or painted directly."""
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache if cached else QGraphicsItem.CacheMode.NoCache)

    def ends(self) -> tuple[QPointF, QPointF]:
        """The output and input port positions it runs between (scene coordinates)."""
        start = self.pos()
        return start, start + (self._delta if self._delta is not None else QPointF())

    def scene_path(self) -> QPainterPath:
        return self.mapToScene(self._path)

    def set_label(self, text: str, invalid: bool, place: bool = True, shown: bool | None = None) -> None:
        """New shape text; ``place=False`` when a path update follows anyway. ``shown``: whether a
        view of the scene draws labels at its zoom (:meth:`labels_shown`), where the caller knows."""
        if (text, invalid) == (self.label, self.invalid):
            return
        recolour = invalid != self.invalid
        self.label, self.invalid = text, invalid
        self._shape = None
        if place:
            self._use_label_place()
        self.setToolTip(self._tip_head + (f"<br>shape {text}" if text else ""))
        if recolour or (labels_shown(self.scene()) if shown is None else shown):
            self.update()
        # else no view draws labels at its zoom: the wire's pixmap stays right (a zoom redraws
        # it). An unwire far out relabels a lane's ~650 wires; redrawing each one's pixmap cost
        # what the cache saves.

    def _use_label_place(self) -> None:
        """Put the label where it goes on the current curve: where it was, if this text was shown
        on it before (its shapes gone and back), else measured and placed."""
        self._shape = None
        placed = self._placed.get(self.label)
        if placed is None:
            if len(self._placed) >= PLACED_KEPT:
                self._placed.clear()
            placed = self._placed[self.label] = self._place_label()
        self._label_rect, self._with_label, self._label_fits = placed
        self._set_bounds()

    def _set_bounds(self) -> None:
        # (setRect changes the geometry, and repaints, only where the bounds really change)
        self.setRect(self._with_label if self._holds_label else self._path_bounds)

    def hold_label(self, on: bool) -> None:
        """Whether the bounds and the hit area hold the label (``on``: a view of the scene draws
        labels at its zoom, :func:`labels_shown`); the scene switches it as views zoom across."""
        if on != self._holds_label:
            self._holds_label = on
            self._shape = None
            self._set_bounds()

    def _place_label(self) -> tuple[QRectF, QRectF, bool]:
        """(label rect, bounds, whether the label fits between the ends) of the current label on
        the current curve; the rects are not changed in place once made (they are kept)."""
        # (a re-check that changes a lane's shapes relabels hundreds of wires: the curve's bounds
        # are kept with the path rather than measured again per label)
        delta = self._delta or QPointF()
        if not self.label:
            return QRectF(), QRectF(self._path_bounds), False
        # The curve is point-symmetric about the middle of its ends: that is its midpoint;
        # a long wire's middle is on its level run.
        mid = QPointF(delta.x() / 2 - BEND / 2, 0.0) if is_long(delta) else delta / 2
        w = _LABEL_WIDTHS.get(self.label)
        if w is None:
            w = _LABEL_WIDTHS.setdefault(self.label, _metrics().horizontalAdvance(self.label) + 8)
        h = _metrics().height() + 2
        rect = QRectF(mid.x() - w / 2, mid.y() - h / 2, w, h)
        # Between nodes packed tight the label would cover the ports: show it on hover only.
        return rect, self._path_bounds.united(rect), abs(delta.x()) >= w + 12 or abs(delta.y()) >= 2 * h

    def path(self) -> QPainterPath:
        return self._path

    def shape(self) -> QPainterPath:
        # A rubber band asks every wire it crosses for this on each mouse move (28,644 strokes
        # per move at 1,000 nodes): stroke once, again only when an end moves relative to the
        # other or the label changes. The path is relative to the output port, so a wire
        # whose ends move together keeps its shape.
        if self._shape is None:
            stroker = QPainterPathStroker()
            stroker.setWidth(10.0)  # easy to click
            shape = stroker.createStroke(self._path)
            if self.label and self._holds_label:
                shape.addRect(self._label_rect)
            self._shape = shape
        return self._shape

    def set_highlight(self, on: bool) -> None:
        """Drawn as if hovered (a palette drag is over it)."""
        if on != self._hovered:
            self._hovered = on
            self.update()

    def hoverEnterEvent(self, event: Any) -> None:  # noqa: N802
        self._hovered = True
        self.update()

    def hoverLeaveEvent(self, event: Any) -> None:  # noqa: N802
        self._hovered = False
        self.update()

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        theme = self.scene().theme  # type: ignore[attr-defined]
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        selected = self.isSelected()
        # A lane's backdrop gone or back repaints every wire in its box, one Python call each: the
        # pen of each look is made once per theme, not per wire per paint.
        look = (id(theme), self.invalid, selected, self._hovered, lod < 0.35)
        kept = _PENS.get(look)
        if kept is None or kept[0] is not theme:
            kept = _PENS[look] = (theme, _pen(theme, *look[1:]))
        pen = kept[1]
        painter.setRenderHint(_ANTIALIASING, lod > 0.35)
        painter.setPen(pen)
        painter.setBrush(_NO_BRUSH)
        painter.drawPath(self._path)
        color = pen.color()
        # Only where its words are as large as a card's smallest (MIN_TEXT_PT on screen): from 45 %
        # to about 64 % the label read as a row of dots; the tooltip keeps the shape.
        if self.label and draws_labels(lod) and (self._label_fits or self._hovered or selected):
            painter.setPen(QPen(color, 1.0))
            painter.setBrush(QBrush(theme.label_bg))
            painter.drawRoundedRect(self._label_rect, 4, 4)
            painter.setFont(_LABEL_FONT)
            painter.setPen(theme.wire_invalid if self.invalid else theme.label_text)
            painter.drawText(self._label_rect, Qt.AlignmentFlag.AlignCenter, self.label)


class DragWire(QGraphicsPathItem):
    """The provisional curve drawn while dragging from a port."""

    def __init__(self, anchor: QPointF, from_output: bool, color: Any) -> None:
        super().__init__()
        self.anchor = anchor
        self.from_output = from_output
        pen = QPen(color, 2.0, Qt.PenStyle.DashLine)
        self.setPen(pen)
        self.setZValue(50.0)
        self.follow(anchor)

    def follow(self, pos: QPointF) -> None:
        if self.from_output:
            self.setPath(wire_path(self.anchor, pos))
        else:
            self.setPath(wire_path(pos, self.anchor))

    def set_ok(self, color: Any) -> None:
        pen = self.pen()
        pen.setColor(color)
        self.setPen(pen)
