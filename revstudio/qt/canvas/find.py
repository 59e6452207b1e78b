"""Find a node (Ctrl+F): a search over the ids and types of the nodes on this canvas.

Typing filters the list (ids that start with the text first, then ids or types that
hold it); Enter or a click selects that node and brings it into view, zoomed in
enough to read.
"""
from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QListWidgetItem, QWidget

from .quick_add import QuickAddPopup


def rank(node_id: str, type_name: str, text: str) -> int | None:
    """Lower is better; None when the node does not match ``text``."""
    text = text.strip().lower()
    ident, kind = node_id.lower(), type_name.lower()
    if not text:
        return 2
    if ident == text:
        return 0
    if ident.startswith(text):
        return 1
    if text in ident:
        return 2
    if kind.startswith(text):
        return 3
    if text in kind:
        return 4
    return None


class FindPopup(QuickAddPopup):
    """The quick-add popup's search field and list, over the canvas's nodes instead of types."""

    def __init__(self, nodes: Iterable[tuple[str, str]], parent: QWidget | None = None) -> None:
        self.nodes = list(nodes)  # (id, type), in the graph's order
        super().__init__((), "Find node", parent)
        self.search.setPlaceholderText("Node id or type…")
        self.filter("")

    def filter(self, text: str) -> None:
        self.list.clear()
        ranked = [(r, i, n) for i, n in enumerate(getattr(self, "nodes", ()))
                  if (r := rank(n[0], n[1], text)) is not None]
        for _, _, (node_id, type_name) in sorted(ranked):
            item = QListWidgetItem(f"{node_id}    ·  {type_name}")
            item.setData(Qt.ItemDataRole.UserRole, node_id)
            self.list.addItem(item)
        if self.list.count():
            self.list.setCurrentRow(0)
        self.say_if_empty(text, "node on this canvas", "type part of an id or a type")
