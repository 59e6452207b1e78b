"""The project's groups by name in the window: rename one, list them (unused ones marked), delete an
unused one.

Reached from Edit > Rename Group… and Edit > Groups, a group tab's context menu and the inspector's
button beside a group pick-list. The edits are the core's ``rename_group`` / ``delete_group``
commands, one undo step each; a refusal is said in a dialog and the status bar.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QMenu

from revstudio.core.graph import GraphError
from revstudio.core.group_edits import delete_group, rename_group
from revstudio.core.grouping import group_users
from revstudio.core.spec import registry

if TYPE_CHECKING:  # pragma: no cover
    from revstudio.qt.main_window import MainWindow


class GroupNames:
    """Group-level edits for one main window."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        bar = window.tabs.tabBar()
        bar.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        bar.customContextMenuRequested.connect(self._tab_menu)

    @property
    def project(self) -> Any:
        return self.window.document.graph

    def target(self) -> str | None:
        """The group of the current tab, else the one the selected node names (Group, Repeat, coupling)."""
        tabs = self.window.tabs
        name = tabs.current_group()
        if name is not None:
            return name
        view = tabs.current_view()
        ids = view.selected_node_ids() if hasattr(view, "selected_node_ids") else []
        node = tabs.current_graph().nodes.get(ids[0]) if len(ids) == 1 else None
        spec = registry.find(node.type) if node is not None else None
        for pname, param in (spec.params.items() if spec is not None else ()):
            value = node.params.get(pname) if node is not None else None
            if param.kind == "group" and value in self.project.groups:
                return str(value)
        return None

    def rename(self, name: str | None = None, new: str | None = None) -> bool:
        """Rename group ``name`` (default: :meth:`target`) to ``new`` (default: asked)."""
        name = name or self.target()
        if name is None:
            self.window.show_message("Rename Group: open a group's tab, or select a Group, Repeat or "
                                     "coupling node, to rename its group")
            return False
        if new is None:
            new = self.window.dialogs.ask_text(self.window, "Rename Group", f"New name for group '{name}':", name)
            if new is None or new.strip() == name:
                return False
        try:
            cmd = rename_group(self.project, name, new)
        except GraphError as exc:
            return self._refuse("Cannot rename group", str(exc))
        self.window.document.push(cmd)
        self.window.show_message(f"Renamed group {name} to {new.strip()}")
        return True

    def delete(self, name: str) -> bool:
        """Delete group ``name``, which nothing may use."""
        try:
            cmd = delete_group(self.project, name)
        except GraphError as exc:
            return self._refuse("Cannot delete group", str(exc))
        self.window.document.push(cmd)
        self.window.show_message(f"Deleted group {name}")
        return True

    def _refuse(self, title: str, text: str) -> bool:
        self.window.show_message(f"{title}: {text}")
        self.window.dialogs.error(self.window, title, text[:1].upper() + text[1:] + ".")
        return False

    def label(self, name: str) -> str:
        """``name``, marked "(unused)" where no node uses it (it stays in the project until deleted)."""
        return name if group_users(self.project, name) else f"{name} (unused)"

    def fill_menu(self, menu: QMenu) -> None:
        """Edit > Groups: each group with Open / Rename… / Delete (Delete only for an unused one)."""
        menu.clear()
        if not self.project.groups:
            menu.addAction("No groups in this project").setEnabled(False)
            return
        for name in list(self.project.groups):
            sub = menu.addMenu(self.label(name))
            self._group_actions(sub, name)

    def _group_actions(self, menu: QMenu, name: str) -> None:
        menu.addAction("Open", lambda *_, n=name: self.window.tabs.open_group(n))
        menu.addAction("Rename Group…", lambda *_, n=name: self.rename(n))
        delete = menu.addAction("Delete Group", lambda *_, n=name: self.delete(n))
        used = group_users(self.project, name)
        delete.setEnabled(not used)
        if used:
            delete.setToolTip(f"Used by {', '.join(used[:3])}: delete or ungroup those first")
        menu.setToolTipsVisible(True)

    def _tab_menu(self, pos: QPoint) -> None:
        tabs = self.window.tabs
        name = tabs.group_at(tabs.tabBar().tabAt(pos))
        if name is None:
            return
        menu = QMenu(tabs)
        self._group_actions(menu, name)
        menu.exec(tabs.tabBar().mapToGlobal(pos))
