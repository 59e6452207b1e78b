"""Find a node (Ctrl+F): a search over the ids and types of the nodes on this canvas.

Typing filters the list (ids that start with the text first, then ids or types that
hold it); Enter or a click selects that node and brings it into view, zoomed in
enough to read. The line under the field counts the matches; Alt+Enter (or its
Select All button) selects every one and frames them, to edit their shared
parameters at once in the inspector, align, group or delete them.

Nodes inside the project's other group bodies are listed after this canvas's
("coupling · AdditiveCoupling — in group block"): choosing one opens that group's
tab on it. Select All takes this canvas's matches only.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidgetItem, QPushButton, QVBoxLayout, QWidget

from .quick_add import QuickAddPopup

SEP = "\x1f"  # between a group's name and a node id in a list key (a control character: in no id)


def split_key(key: str) -> tuple[str | None, str]:
    """(the group whose body holds it, or None for this canvas; the node id) of a list key."""
    group, sep, node_id = key.partition(SEP)
    return (group, node_id) if sep else (None, key)


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

    chosen_all = Signal(list)  # Alt+Enter / Select All: the ids of every match, in the list's order

    def __init__(self, nodes: Iterable[tuple[str, str]], parent: QWidget | None = None,
                 elsewhere: Iterable[tuple[str, str, str]] = ()) -> None:
        self.nodes = list(nodes)  # (id, type), in the graph's order
        self.elsewhere = list(elsewhere)  # (group, id, type): nodes in the project's other group bodies
        super().__init__((), "Find node", parent)
        self.search.setPlaceholderText("Node id or type…")
        self.count = QLabel()
        self.count.setObjectName("placeholder")
        self.select_all = QPushButton("Select All")
        self.select_all.setToolTip("Select every node that matches and frame them (Alt+Enter)")
        self.select_all.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the keys stay in the search field
        self.select_all.clicked.connect(self.choose_all)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.count, 1)
        row.addWidget(self.select_all)
        cast(QVBoxLayout, self.layout()).insertLayout(2, row)  # under the search field
        self.filter("")

    def filter(self, text: str) -> None:
        self.list.clear()
        ranked = [(r, i, n) for i, n in enumerate(getattr(self, "nodes", ()))
                  if (r := rank(n[0], n[1], text)) is not None]
        for _, _, (node_id, type_name) in sorted(ranked):
            item = QListWidgetItem(f"{node_id}    ·  {type_name}")
            item.setData(Qt.ItemDataRole.UserRole, node_id)
            self.list.addItem(item)
        found = self.list.count()
        # then the other group bodies' nodes (after this canvas's: those are the ones in view)
        inside = [(r, i, n) for i, n in enumerate(getattr(self, "elsewhere", ()))
                  if (r := rank(n[1], n[2], text)) is not None]
        for _, _, (group, node_id, type_name) in sorted(inside):
            item = QListWidgetItem(f"{node_id}    ·  {type_name}  \u2014 in group {group}")
            item.setData(Qt.ItemDataRole.UserRole, f"{group}{SEP}{node_id}")
            item.setToolTip(f"Opens group {group}'s tab on {node_id}")
            self.list.addItem(item)
        if self.list.count():
            self.list.setCurrentRow(0)
        self.say_if_empty(text, "node in this project" if getattr(self, "elsewhere", None) else "node on this canvas",
                          "type part of an id or a type")
        if hasattr(self, "count"):
            total = len(self.nodes)
            in_groups = f" (and {len(inside)} in groups)" if inside else ""
            self.count.setText(f"{found} of {total} node{'s' if total != 1 else ''} match{in_groups}"
                               + (" · Alt+Enter selects them all" if found > 1 else ""))
            self.count.setVisible(self.list.count() > 0)
            self.select_all.setText(f"Select All {found}")
            self.select_all.setVisible(found > 1)

    def choose_all(self) -> None:
        """Select every match on this canvas (nodes in other tabs cannot be selected with them)."""
        ids = [key for key in self.visible_types() if split_key(key)[0] is None]
        if ids:
            self.close()
            self.chosen_all.emit(ids)

    def eventFilter(self, obj: object, event: object) -> bool:  # noqa: N802 - Qt API
        if (isinstance(event, QKeyEvent) and event.type() == QEvent.Type.KeyPress
                and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
                and event.modifiers() & Qt.KeyboardModifier.AltModifier):
            self.choose_all()
            return True
        return super().eventFilter(obj, event)
