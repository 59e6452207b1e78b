"""Reversible-region backdrops and the short-lived hint label near the cursor.

A :class:`RegionItem` is a translucent rounded box behind the nodes of one
reversible region (from ``report.regions``), labelled with the activation
memory the region saves (from ``report.estimate``). :class:`HintItem` shows why
a connection is refused (or what it would carry) next to the cursor.
"""
from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

_REGION_FONT = QFont()
_REGION_FONT.setPointSizeF(8.5)
_REGION_FONT.setBold(True)
_HINT_FONT = QFont()
_HINT_FONT.setPointSizeF(8.5)
MARGIN = 18.0
BAND = 56.0  # room above the box for the label, which grows when zoomed out
FAR_LABEL = 0.18  # below this zoom the label keeps ~12 screen px in a taller band above the box (the
# 56-unit band would hold under 10 px there)
FAR_BAND = 200.0  # that band (scene units): room for 12 px down to a zoom of 0.07
LABEL_PX = 12.0
# A label cut to fewer characters than this is not drawn (level of detail, as a far node card
# drops its words): 'r…)' beside a close neighbour far out told nothing the box's colour does
# not; the tooltip keeps the whole label.
MIN_LABEL_CHARS = 6


def readable(shown: str, label: str) -> str:
    """``shown`` (``label`` as cut to its room), or "" where too little of it is left to read."""
    if shown == label:
        return shown
    return shown if len(shown.replace("…", "").strip()) >= MIN_LABEL_CHARS else ""


class RegionItem(QGraphicsItem):
    """One reversible region, drawn behind its nodes."""

    saves = True  # False: drawn neutral, not as a saving
    current = True  # False: the label is the badge of the state before the last edit (being updated)
    waiting = False  # True: not current past the document's WAITING_MS: the label is drawn grey

    def __init__(self, region_id: str, node_ids: tuple[str, ...], label: str, tooltip: str) -> None:
        super().__init__()
        self.region_id = region_id
        self.node_ids = node_ids
        self.blockers: set[str] = set()  # nodes outside the region that cut its label short
        self.label = label
        self._rect = QRectF()
        self.setZValue(-10.0)
        # the label may be elided (far out, or where another node is in its way): the tooltip has it whole
        self.setToolTip(tooltip if tooltip.startswith(label) else f"{label}\n{tooltip}")
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)  # clicks fall through to the canvas
        # Big translucent boxes are costly to fill; Qt caches only the exposed part.
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)

    def set_badge(self, label: str, tooltip: str, saves: bool) -> None:
        """The label of the current state (its peaks walked): drawn as current."""
        tip = tooltip if tooltip.startswith(label) else f"{label}\n{tooltip}"
        if tip != self.toolTip():
            self.setToolTip(tip)
        self.current = True
        if (label, saves, False) == (self.label, self.saves, self.waiting):
            return  # (drawn the same: no repaint of a box that may span the canvas, every wire in it)
        if label != self.label:
            self.prepareGeometryChange()  # the room for the label is part of the bounding rect
            self.label = label
        self.saves, self.waiting = saves, False
        self.update()

    def set_waiting(self) -> None:
        """A label not yet current draws grey: the wait for its figures has become visible."""
        if not self.current and not self.waiting:
            self.waiting = True
            self.update()

    def fit(self, rects: list[QRectF]) -> None:
        if not rects:
            return
        box = rects[0]
        for r in rects[1:]:
            box = box.united(r)
        # The members and their margin only: a box widened to its label covered the next node
        # (revnet_coupling's Pool beside its one-Repeat region), which then read as inside it.
        # The label runs past the box in the band above it; the tooltip holds the whole text.
        box = box.adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN)
        if box != self._rect:
            self.prepareGeometryChange()
            self._rect = box
            self._neighbours_changed()

    def include(self, rect: QRectF) -> None:
        """Grow to cover a dragged member (cheap; the exact fit follows the edit)."""
        box = rect.adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN)
        if not self._rect.contains(box):
            self.prepareGeometryChange()
            self._rect = self._rect.united(box)
            self._neighbours_changed()

    def _siblings(self) -> list[RegionItem]:
        scene = self.scene()
        found = getattr(scene, "region_items", None) if scene is not None else None
        return [r for r in found or () if r is not self and r.scene() is scene]

    def _neighbours_changed(self) -> None:
        """Another region's label may be cut where this box begins: repaint them (cached)."""
        for other in self._siblings():
            other.update()

    def _label_end(self, band: float) -> float | None:
        """Scene x where this label must stop: the left edge of the nearest region to the right
        whose box, or the label band above it, shares the rows of this label (two short regions
        side by side in one row drew their labels over each other); None: no such region."""
        top, bottom = self._rect.top() - band, self._rect.top()
        end = None
        for other in self._siblings():
            box = other._rect
            if box.left() <= self._rect.left() or box.top() - band >= bottom or box.bottom() <= top:
                continue
            end = box.left() if end is None else min(end, box.left())
        return None if end is None else end - 8.0

    def box(self) -> QRectF:
        """The backdrop itself (the bounding rect adds the label band above it)."""
        return QRectF(self._rect)

    def fit_rect(self) -> QRectF:
        """What a Fit must show: the backdrop and its label as drawn at zoom 1. The bounding rect's
        room for a label grown far out (10x) would make a narrow region's fit zoom out, which
        grows the label's room in turn."""
        return self._rect.united(self.label_layout(1.0)[1])

    def _label_room(self) -> float:
        # The label may grow up to 10x when zoomed out (12 px at a zoom of 0.1); it reaches past a narrow box.
        return QFontMetricsF(_REGION_FONT).horizontalAdvance(self.label) * 10.0 + 24

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        extra = max(1.0, self._label_room() - self._rect.width())
        return self._rect.adjusted(-1, -FAR_BAND - 1, extra, 1)

    def shape(self) -> QPainterPath:
        """The backdrop alone: hovering the band above it (the label's room) is not the region."""
        path = QPainterPath()
        path.addRoundedRect(self._rect, 12, 12)
        return path

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        theme = self.scene().theme  # type: ignore[attr-defined]
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        # a region that saves nothing at the figures' batch is not drawn in the saving green
        border, fill, text = ((theme.region_border, theme.region_fill, theme.region_text) if self.saves
                              else (QColor(140, 140, 140, 150), QColor(140, 140, 140, 28), QColor(150, 150, 150)))
        pen = QPen(border, 1.5)
        pen.setCosmetic(True)
        painter.setPen(pen)
        painter.setBrush(QBrush(fill))
        painter.drawRoundedRect(self._rect, 12, 12)
        # Zoomed out, the label grows so the saving stays readable on screen.
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        font, rect, shown, inside = self.label_layout(lod)
        if not shown:  # cut too short to read
            return
        painter.setFont(font)
        painter.setPen(QColor(150, 150, 150) if self.waiting else theme.region_text if inside else text)
        align = Qt.AlignmentFlag.AlignTop if inside else Qt.AlignmentFlag.AlignBottom
        painter.drawText(rect, Qt.AlignmentFlag.AlignLeft | align, shown)

    def label_layout(self, lod: float) -> tuple[QFont, QRectF, str, bool]:
        """(font, scene rect, text, inside the box?) of the label at zoom ``lod``; the text is ""
        where the label would be cut to fewer than MIN_LABEL_CHARS characters (not drawn)."""
        font = QFont(_REGION_FONT)
        if lod < FAR_LABEL and FAR_BAND * lod >= LABEL_PX + 2:
            # Far out, still above the box, where the nodes inside cannot cover it: ~12 screen px
            # high, cut in the middle (its start and its budget part stay) where it would pass the
            # room the item has on the right
            font.setPointSizeF(LABEL_PX / max(lod, 1e-3) * 0.75)
            room = max(self._rect.width(), self._label_room()) - 8
            end = self._label_end(FAR_BAND)
            if end is not None:  # another region's box or label to the right: stop short of it
                room = max(min(room, end - self._rect.left() - 6), 0.0)
            shown = readable(QFontMetricsF(font).elidedText(self.label, Qt.TextElideMode.ElideMiddle, room), self.label)
            return font, QRectF(self._rect.left() + 6, self._rect.top() - FAR_BAND, room, FAR_BAND - 2), shown, False
        if lod < FAR_LABEL:
            # Farther out (nodes are specks) the band is too thin to read: the label goes inside
            # the box, ~13 screen px high, as large as the box allows.
            base = QFontMetricsF(_REGION_FONT).horizontalAdvance(self.label) or 1.0
            size = min(13.0 / max(lod, 1e-3), _REGION_FONT.pointSizeF() * (self._rect.width() - 24) / base,
                       self._rect.height() * 0.3)
            font.setPointSizeF(max(size, 1.0))
            return font, self._rect.adjusted(12, 6, -12, -6), self.label, True
        # ~12 screen px high, as far as the band above the box allows
        scale = min(max(1.0, 0.9 / max(lod, 1e-3)), 3.0)  # 3x still fits the band
        font.setPointSizeF(max(_REGION_FONT.pointSizeF() * scale, min(12.0 / max(lod, 1e-3), BAND - 10) * 0.75))
        width = max(self._rect.width() - 12, QFontMetricsF(font).horizontalAdvance(self.label) + 4)
        rect = QRectF(self._rect.left() + 6, self._rect.top() - BAND, width, BAND - 2)
        shown, end = self.label, self._label_end(BAND)
        if end is not None and rect.left() + width > end:
            # another region's box or label to the right: cut this one short of it (the
            # tooltip has it whole) rather than draw the two over each other
            rect.setWidth(max(end - rect.left(), 0.0))
            shown = readable(QFontMetricsF(font).elidedText(self.label, Qt.TextElideMode.ElideRight,
                                                            max(rect.width() - 4, 0.0)), self.label)
        free = self._room_before_other_node(rect)
        if free is not None and free < rect.width():
            # a node beside the region stands in the band: the label ends before it, cut in the middle
            rect.setWidth(max(free, min(rect.width(), self._rect.width() - 12)))
            shown = readable(QFontMetricsF(font).elidedText(self.label, Qt.TextElideMode.ElideMiddle,
                                                            max(rect.width() - 4, 0.0)), self.label)
        return font, rect, shown, False

    def _room_before_other_node(self, rect: QRectF) -> float | None:
        """Width from ``rect``'s left to the first node outside this region that stands in it
        (an Output a little higher than the region's top covered the label's end), or None."""
        scene = self.scene()
        if scene is None:
            return None
        members = set(self.node_ids)
        lefts: dict[str, float] = {}
        for item in scene.items(rect):
            node_id = getattr(item, "node_id", None)
            if node_id is not None and node_id not in members:
                lefts[node_id] = item.sceneBoundingRect().left()
        self.blockers = set(lefts)
        return min(lefts.values()) - rect.left() - 8 if lefts else None

    def label_band(self) -> QRectF:
        """Where a node would cut the label short: the band above the box, as wide as the label may run."""
        rect = self.boundingRect()
        rect.setBottom(self._rect.top())
        return rect


class HintItem(QGraphicsItem):
    """A small rounded label placed next to the cursor; ignores view zoom."""

    def __init__(self) -> None:
        super().__init__()
        self.text = ""
        self.color = QColor("white")
        self._rect = QRectF()
        self.setZValue(100.0)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations, True)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.hide()

    def show_text(self, text: str, color: QColor, pos: QPointF) -> None:
        fm = QFontMetricsF(_HINT_FONT)
        w = min(fm.horizontalAdvance(text) + 14, 520)
        self.prepareGeometryChange()
        self.text, self.color = text, color
        self._rect = QRectF(14, 10, w, fm.height() + 8)
        self.setPos(pos)
        self.show()
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._rect

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        theme = self.scene().theme  # type: ignore[attr-defined]
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(QPen(self.color, 1.2))
        painter.setBrush(QBrush(theme.label_bg))
        painter.drawRoundedRect(self._rect, 5, 5)
        painter.setFont(_HINT_FONT)
        painter.setPen(self.color)
        text = QFontMetricsF(_HINT_FONT).elidedText(self.text, Qt.TextElideMode.ElideRight, self._rect.width() - 10)
        painter.drawText(self._rect, Qt.AlignmentFlag.AlignCenter, text)
