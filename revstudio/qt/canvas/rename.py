"""Renaming a node from the canvas or the inspector: the in-place field and the one rule
for what a new id may be (so both places refuse the same names with the same words)."""
from __future__ import annotations

from typing import TYPE_CHECKING, cast

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFocusEvent, QKeyEvent
from PySide6.QtWidgets import QGraphicsView, QLabel, QLineEdit, QWidget

from revstudio.core.graph import Graph, valid_id
from revstudio.qt import theme

from .view_parts import ViewParts


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
    """The in-place editor of a node's id; says ``done(node_id, text)`` once, or nothing on Escape.

    A name refused on Enter (:meth:`refuse`) keeps the field open with the typed text and the
    reason under it, to be corrected; Escape still cancels. Clicking away ends the edit."""

    done = Signal(str, str)

    def __init__(self, node_id: str, parent: QWidget) -> None:
        super().__init__(parent)
        self.node_id = node_id
        self.by_key = False  # the edit ended with Enter (not by clicking away)
        self._over = False
        self.note = QLabel(parent)  # the refusal, under the field (a sibling: a child would be clipped)
        self.note.setObjectName("renameRefusal")
        self.note.setWordWrap(True)
        error = theme.colors().error  # readable on the base colour in both themes
        self.note.setStyleSheet(f"background: palette(base); color: {error}; padding: 2px 4px;"
                                f"border: 1px solid {error}")
        self.note.hide()

    def _finish(self, by_key: bool) -> None:
        if not self._over:
            self._over = True
            self.by_key = by_key
            self.done.emit(self.node_id, self.text())

    def refuse(self, problem: str) -> None:
        """Stay open on the typed text, saying why it is not a name."""
        self._over = False
        self.setStyleSheet(f"border: 2px solid {theme.colors().error}")
        self.setToolTip(problem)
        self.note.setText(f"{problem} (Esc cancels)")
        self.note.setFixedWidth(max(self.width(), 220))
        self.note.adjustSize()
        self.note.move(self.x(), self.y() + self.height() + 2)
        self.note.show()
        self.note.raise_()
        self.setFocus()

    def close_field(self) -> None:
        self._over = True
        self.note.deleteLater()
        self.deleteLater()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Escape:
            self._over = True
            self.done.emit(self.node_id, self.node_id)  # unchanged: nothing happens
            return
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self._finish(by_key=True)
            return
        super().keyPressEvent(event)

    def focusOutEvent(self, event: QFocusEvent) -> None:  # noqa: N802
        super().focusOutEvent(event)
        if self.isVisible():
            self._finish(by_key=False)


class RenameMixin(ViewParts):
    """Renaming in place, for :class:`GraphView`: a field over the node's header."""

    if TYPE_CHECKING:  # provided by GraphView (and ViewParts' declarations)
        rename_field: RenameField | None

        def selected_node_ids(self) -> list[str]: ...

    def rename_selected(self) -> None:
        """F2: rename the one selected node in place."""
        ids = self.selected_node_ids()
        if len(ids) == 1:
            self.start_rename(ids[0])
        else:
            self.message.emit("Rename: select one node first (F2 renames it)")

    def start_rename(self, node_id: str) -> QLineEdit | None:
        """A field over the node's header; Enter (or clicking away) renames, Escape cancels."""
        item = self._scene.node_items.get(node_id)
        if item is None:
            return None
        if self.rename_field is not None:
            self.rename_field.close_field()
        view = cast(QGraphicsView, self)  # the mixin only ever lives in GraphView
        zoom = view.transform().m11()
        top_left = view.mapFromScene(item.pos())
        width = max(120, int(item.boundingRect().width() * zoom))
        field = RenameField(node_id, view.viewport())
        field.setGeometry(top_left.x(), top_left.y(), width, max(22, int(24 * zoom)))
        field.setText(node_id)
        field.selectAll()
        field.show()
        field.setFocus()
        field.done.connect(self._finish_rename)
        self.rename_field = field
        return field

    def _finish_rename(self, node_id: str, text: str) -> None:
        from revstudio.core.commands import RenameNode

        field = self.rename_field
        new = text.strip()
        problem = None
        if new and new != node_id and node_id in self.graph.nodes:
            problem = rename_problem(self.graph, new)
        if problem is not None:
            self.message.emit(f"Not renamed: {problem}")
            if field is not None and field.by_key:  # Enter: keep what was typed, to be corrected
                field.refuse(problem)
                return
        self.rename_field = None
        if field is not None:
            field.close_field()
        cast(QGraphicsView, self).setFocus()
        if new and new != node_id and node_id in self.graph.nodes and problem is None:
            self.document.push(RenameNode(self.graph, node_id, new))
            self.message.emit(f"Renamed {node_id} to {new}")
