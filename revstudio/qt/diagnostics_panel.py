"""The diagnostics list: every error and warning of the latest check.

Clicking a row selects (and reveals) the node it names, or every node it concerns
(one plugin-swap warning for all the nodes using the type: its Where names the first two
and counts the rest, its tooltip lists them all, and the click frames them all); near
misses (why a merge is not a coupling) are listed too, as hints.
"""
from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QLabel,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from revstudio.qt.document import Document
from revstudio.qt.theme import colors, icon

NODE_ROLE = Qt.ItemDataRole.UserRole + 1


def where_text(nodes: list[str], shown: int = 2) -> str:
    """The Where of a problem about several nodes: "a, b and c", or "a, b and 3 more"."""
    if len(nodes) <= shown + 1:
        return ", ".join(nodes[:-1]) + f" and {nodes[-1]}"
    return f"{', '.join(nodes[:shown])} and {len(nodes) - shown} more"


class _WrapDelegate(QStyledItemDelegate):
    """Rows as tall as their wrapped message: QTreeView sizes rows without the column width."""

    def __init__(self, tree: QTreeWidget) -> None:
        super().__init__(tree)
        self.tree = tree

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:  # noqa: N802
        size = super().sizeHint(option, index)
        if index.column() not in (1, 2):  # the message, and a Where naming several nodes, wrap
            return size
        width = max(40, self.tree.columnWidth(index.column()) - 10)
        text = str(index.data() or "")
        box = QFontMetrics(option.font).boundingRect(QRect(0, 0, width, 100000), Qt.TextFlag.TextWordWrap, text)
        return QSize(size.width(), max(size.height(), box.height() + 6))


class DiagnosticsPanel(QWidget):
    """A table of severity / where / message."""

    nodesActivated = Signal(list)  # the node ids a clicked row is about, its own first

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.tree = QTreeWidget(self)
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["", "Where", "Message"])
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(False)
        # Long messages (why a merge is not a coupling) wrap instead of being cut off.
        self.tree.setUniformRowHeights(False)
        self.tree.setWordWrap(True)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.tree.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.tree.setColumnWidth(0, 28)
        self.tree.setColumnWidth(1, 140)
        self.tree.header().setStretchLastSection(True)
        self.tree.setItemDelegate(_WrapDelegate(self.tree))
        self.tree.header().sectionResized.connect(lambda *_: self.tree.doItemsLayout())
        self.empty = QLabel("No problems: every node has valid parameters and known shapes.", self)
        self.empty.setObjectName("placeholder")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)  # a narrow Output panel wraps it instead of cutting both ends
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.tree)
        layout.addWidget(self.empty)
        self.tree.itemClicked.connect(self._on_clicked)
        self.tree.itemActivated.connect(self._on_clicked)
        document.analysisChanged.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        report = self.document.report
        self.tree.clear()
        diags = list(getattr(report, "diagnostics", None) or [])
        hints = [d for d in (getattr(report, "near_misses", None) or []) if d not in diags]
        if self.document.analysis_error:
            item = QTreeWidgetItem(["", "analysis", self.document.analysis_error])
            item.setIcon(0, icon("error", colors().error))
            self.tree.addTopLevelItem(item)
        for d, hint in [(d, False) for d in diags] + [(d, True) for d in hints]:
            nodes = list(getattr(d, "nodes", None) or ([d.node] if d.node else []))
            where = (d.node or "project") + (f".{d.port}" if getattr(d, "port", None) else "")
            item = QTreeWidgetItem(["", where_text(nodes) if len(nodes) > 1 else where, d.message])
            if len(nodes) > 1:
                item.setToolTip(1, f"{len(nodes)} nodes: {', '.join(nodes)}")
            if hint:
                item.setIcon(0, icon("info", colors().muted))
                item.setToolTip(0, "near miss: why this is not reversible")
            elif d.severity == "error":
                item.setIcon(0, icon("error", colors().error))
                item.setToolTip(0, "error")
            else:
                item.setIcon(0, icon("warning", colors().warning))
                item.setToolTip(0, "warning")
            item.setToolTip(2, d.message)
            item.setData(0, NODE_ROLE, nodes)
            self.tree.addTopLevelItem(item)
        has_rows = self.tree.topLevelItemCount() > 0
        self.tree.setVisible(has_rows)
        self.empty.setVisible(not has_rows)

    def row_count(self) -> int:
        return self.tree.topLevelItemCount()

    def _on_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        nodes = item.data(0, NODE_ROLE)
        if nodes:
            self.nodesActivated.emit(list(nodes))
