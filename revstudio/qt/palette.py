"""The palette: every registered node type, grouped by category, searchable.

Dragging a type onto the canvas adds it; the drag's MIME payload carries only
the type id (``application/x-revstudio-node-type``), so the canvas looks the
spec up itself. Double-click (or Enter) adds the type in free space beside the selection.
"""
from __future__ import annotations

import html
from collections.abc import Sequence

from PySide6.QtCore import QMimeData, QSize, Qt, Signal
from PySide6.QtGui import QIcon, QKeyEvent, QPainter, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLabel,
    QLineEdit,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from revstudio.core import node_reference
from revstudio.core.spec import NodeSpec, registry
from revstudio.qt.theme import current, icon

NODE_MIME = "application/x-revstudio-node-type"
TYPE_ROLE = Qt.ItemDataRole.UserRole + 1

# Categories the user reaches for most come first; any others follow alphabetically.
CATEGORY_ORDER = ("i/o", "io", "layers", "recurrent", "structure", "invertible", "couplings", "groups")


def category_key(name: str) -> tuple[int, str]:
    low = name.lower()
    return (CATEGORY_ORDER.index(low) if low in CATEGORY_ORDER else len(CATEGORY_ORDER), low)


def _category_icon(category: str) -> QIcon:
    """A rounded swatch in the colour the canvas gives this category's node headers."""
    from revstudio.qt.canvas.theme import theme_for

    color = theme_for(current() == "dark").category_color(category)
    pm = QPixmap(28, 28)
    pm.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pm)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(color)
    painter.drawRoundedRect(4, 7, 20, 14, 4, 4)
    painter.end()
    return QIcon(pm)


class _PaletteTree(QTreeWidget):
    # Enter on a type adds it. Not through itemActivated: Qt emits that after
    # itemDoubleClicked for the same double-click (one gesture added two nodes), and on
    # single-click-activation styles on every click.
    enterPressed = Signal(QTreeWidgetItem)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt API
        item = self.currentItem()
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and item is not None and not item.isHidden():
            self.enterPressed.emit(item)
            event.accept()
            return
        super().keyPressEvent(event)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setHeaderHidden(True)
        self.setDragEnabled(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragOnly)
        self.setRootIsDecorated(False)
        self.setIndentation(12)
        self.setUniformRowHeights(True)
        # An explicit icon size: the style's default changes with a style sheet, and the
        # rows would grow after a theme switch and stay tall.
        self.setIconSize(QSize(14, 14))
        self.setObjectName("paletteTree")  # compact rows, the same in both themes
        self.setAnimated(True)

    def mimeTypes(self) -> list[str]:  # noqa: N802 - Qt API
        return [NODE_MIME]

    def mimeData(self, items: Sequence[QTreeWidgetItem]) -> QMimeData:  # noqa: N802 - Qt API
        data = QMimeData()
        type_ids = [i.data(0, TYPE_ROLE) for i in items if i.data(0, TYPE_ROLE)]
        if type_ids:
            data.setData(NODE_MIME, type_ids[0].encode("utf-8"))
            data.setText(type_ids[0])
        return data


class PaletteWidget(QWidget):
    """Search field + category tree + help for the highlighted type."""

    addRequested = Signal(str)  # type id: add at the view centre

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.search = QLineEdit(self)
        self.search.setPlaceholderText("Search nodes…")
        self.search.setClearButtonEnabled(True)
        self.search.addAction(icon("search"), QLineEdit.ActionPosition.LeadingPosition)
        self.tree = _PaletteTree(self)
        self.help = QLabel(self)
        self.help.setObjectName("paletteHelp")
        self.help.setWordWrap(True)
        self.help.setMinimumHeight(48)
        self.help.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(6)
        layout.addWidget(self.search)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.help)

        self.search.textChanged.connect(self.filter)
        self.search.returnPressed.connect(self._add_first_visible)
        self.tree.itemDoubleClicked.connect(self._on_double_click)
        self.tree.enterPressed.connect(self._on_double_click)
        self.tree.currentItemChanged.connect(self._on_current)
        self.populate()

    def populate(self) -> None:
        """(Re)build the tree from the registry."""
        self.tree.clear()
        categories = registry.categories()
        for category in sorted(categories, key=category_key):
            head = QTreeWidgetItem([category])
            head.setFlags(Qt.ItemFlag.ItemIsEnabled)
            font = head.font(0)
            font.setBold(True)
            head.setFont(0, font)
            self.tree.addTopLevelItem(head)
            for spec in sorted(categories[category], key=lambda s: s.display_name.lower()):
                head.addChild(self._item(spec))
            head.setExpanded(True)
        self.filter(self.search.text())

    def _item(self, spec: NodeSpec) -> QTreeWidgetItem:
        item = QTreeWidgetItem([spec.display_name])
        item.setData(0, TYPE_ROLE, spec.type_id)
        item.setIcon(0, _category_icon(spec.category))
        item.setToolTip(0, node_reference.text(spec, registry))  # what 'revstudio nodes TYPE' prints
        item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsDragEnabled)
        return item

    def _heads(self) -> list[QTreeWidgetItem]:
        heads = (self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount()))
        return [h for h in heads if h is not None]

    @staticmethod
    def _children(head: QTreeWidgetItem) -> list[QTreeWidgetItem]:
        kids = (head.child(j) for j in range(head.childCount()))
        return [k for k in kids if k is not None]

    def type_items(self) -> list[QTreeWidgetItem]:
        return [item for head in self._heads() for item in self._children(head)]

    def item_for(self, type_id: str) -> QTreeWidgetItem | None:
        return next((i for i in self.type_items() if i.data(0, TYPE_ROLE) == type_id), None)

    def visible_type_ids(self) -> list[str]:
        return [i.data(0, TYPE_ROLE) for i in self.type_items() if not i.isHidden()]

    def filter(self, text: str) -> None:
        """Show types whose name, category or help mentions every word of ``text``."""
        words = text.lower().split()
        for head in self._heads():
            any_visible = False
            for item in self._children(head):
                spec = registry.find(item.data(0, TYPE_ROLE))
                hay = " ".join([spec.type_id, spec.display_name, spec.category, spec.help]).lower() if spec else ""
                match = all(w in hay for w in words)
                item.setHidden(not match)
                any_visible |= match
            head.setHidden(not any_visible)
        best = self._best_match(text)
        first = self.item_for(best) if best else None
        if words and first is not None:
            self.tree.setCurrentItem(first)
        elif words:
            self.help.setText(f"No node type matches '{text.strip()}'.")

    def _on_current(self, item: QTreeWidgetItem | None, _prev: QTreeWidgetItem | None) -> None:
        spec = registry.find(item.data(0, TYPE_ROLE)) if item is not None and item.data(0, TYPE_ROLE) else None
        if spec is None:
            self.help.setText("Drag a node onto the canvas, or double-click to add it at the centre.")
            return
        ports = f"inputs: {node_reference.ports_text(spec, True)} · outputs: {node_reference.ports_text(spec, False)}"
        # the brief entry's first line (the tooltip and the inspector hold it all): the list keeps its room
        brief = html.escape(node_reference.brief(spec).splitlines()[0])
        self.help.setText(f"<b>{html.escape(spec.display_name)}</b> · {html.escape(spec.category)}<br>{brief}"
                          f"<br><i>{html.escape(ports)}</i>")

    def _on_double_click(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        type_id = item.data(0, TYPE_ROLE)
        if type_id:
            self.addRequested.emit(type_id)

    def _best_match(self, text: str) -> str | None:
        """The visible type Enter adds: one whose name starts with ``text``, else contains it,
        else the first listed (a match in a help text only: "coupl" must not pick Merge)."""
        visible = self.visible_type_ids()
        text = text.strip().lower()

        def rank(type_id: str) -> int:
            spec = registry.find(type_id)
            names = (type_id.lower(), spec.display_name.lower() if spec else "")
            return 0 if any(n.startswith(text) for n in names) else 1 if any(text in n for n in names) else 2

        return min(visible, key=rank) if visible else None  # min keeps the list's order among equals

    def _add_first_visible(self) -> None:
        best = self._best_match(self.search.text())
        if best:
            self.addRequested.emit(best)
