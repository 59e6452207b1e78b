"""Renaming a node from the canvas or the inspector: the in-place field and the one rule
for what a new id may be (so both places refuse the same names with the same words)."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QLineEdit, QWidget

from revstudio.core.graph import Graph, valid_id


def rename_problem(graph: Graph, new: str) -> str | None:
    """Why ``new`` cannot be a node id in ``graph`` (None: it can)."""
    if not new:
        return "a node id cannot be empty"
    if new in graph.nodes:
        return f"'{new}' is already the id of another node"
    if not valid_id(new):
        return f"'{new}' has spaces, dots or more than 64 characters"
    return None


class RenameField(QLineEdit):
    """The in-place editor of a node's id; says ``done(node_id, text)`` once, or nothing on Escape."""

    done = Signal(str, str)

    def __init__(self, node_id: str, parent: QWidget) -> None:
        super().__init__(parent)
        self.node_id = node_id
        self._over = False
        self.editingFinished.connect(self._finish)

    def _finish(self) -> None:
        if not self._over:
            self._over = True
            self.done.emit(self.node_id, self.text())

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Escape:
            self._over = True
            self.done.emit(self.node_id, self.node_id)  # unchanged: nothing happens
            return
        super().keyPressEvent(event)
