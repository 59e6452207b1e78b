"""Canvas tabs: the main graph, plus one tab per opened group body (and read-only run snapshots).

Tab opens a Group node's body on its own canvas; a group tab closes itself
when its body disappears from the project (ungroup, undo, another file), and the
undo or redo that brings the body back reopens it.
Ctrl+G collapses the selection into a Group node and Ctrl+Shift+G restores it,
both through core grouping commands pushed on the document's undo stack.
A read-only tab shows another document (a run's snapshot, qt/runs/snapshot.py):
the inspector never edits it, and edits made on its canvas go to that document,
which refuses them.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QMenu, QTabWidget, QWidget

from revstudio.core.graph import Graph
from revstudio.qt.document import Document
from revstudio.qt.theme import icon

log = logging.getLogger("revstudio")
# What the status bar says when a canvas laid out nodes its file had placed on one another.
STACKED_NOTE = ("Laid out the nodes, which the file placed on one another (it gave them no positions); "
                "Ctrl+Z puts them back, Save keeps the layout")


class CanvasTabs(QTabWidget):
    """Tab 0 is the main graph; the others are group bodies (closable)."""

    selectionChanged = Signal(object, list)  # (graph shown, selected node ids)
    message = Signal(str)

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.setDocumentMode(True)
        self.setTabsClosable(True)
        self.setMovable(False)
        self.tabBar().setDrawBase(False)
        # Tab is the canvas's key (Open Group): on a focused tab bar it fired that shortcut instead
        # of moving on, so keyboard focus stopped there; Ctrl+Tab still switches tabs.
        self.tabBar().setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.dark = True
        self.overview = True  # View > Overview, given to each canvas made
        self._groups: dict[str, QWidget] = {}
        self._read_only: dict[str, Any] = {}  # key (e.g. a run folder) -> view of another document
        self._closed_by_edit: dict[str, bool] = {}  # group tabs an edit closed -> whether one was current
        self.tabCloseRequested.connect(self._close_tab)
        self.currentChanged.connect(self._on_current)
        self._watched: Graph | None = None
        self._add_main()
        document.graphReplaced.connect(self._on_graph_replaced)

    # ---- views ----------------------------------------------------------
    def _make_view(self, graph: Graph | None) -> QWidget:
        from revstudio.qt.canvas import GraphView

        view = GraphView(self.document, graph)
        view.selectionChangedIds.connect(lambda ids, v=view: self._on_view_selection(v, ids))
        view.message.connect(self.message)
        view.openGroupRequested.connect(self.open_group)
        if hasattr(view, "findInGroup"):
            view.findInGroup.connect(self.show_in_group)
        view.contextMenuRequested.connect(self._extend_menu)
        if hasattr(view, "set_theme"):
            view.set_theme(self.dark)
        if hasattr(view, "overview"):
            view.overview.set_wanted(self.overview)
        return view

    def _add_main(self) -> None:
        view = self._make_view(None)
        self.insertTab(0, view, icon("node"), self.document.graph.name or "main")
        self.tabBar().setTabButton(0, self.tabBar().ButtonPosition.RightSide, None)
        self._watch(self.document.graph)
        # A window built around a loaded document (no graphReplaced to come) shows its saved view or
        # the whole graph, as opening the file does; it is refitted as the window settles.
        self.restore_view()

    def main_view(self) -> Any:
        return self.widget(0)

    def current_view(self) -> Any:
        return self.currentWidget()

    def current_graph(self) -> Graph:
        view: Any = self.currentWidget()
        if view is not None and view in self._read_only.values():
            return view.graph
        name = self.current_group()
        return self.document.graph.groups.get(name, self.document.graph) if name else self.document.graph

    def current_group(self) -> str | None:
        view = self.currentWidget()
        return next((n for n, v in self._groups.items() if v is view), None)

    def group_at(self, index: int) -> str | None:
        """The group whose tab is at ``index`` (None for the main tab, a read-only one or none)."""
        view = self.widget(index) if index >= 0 else None
        return next((n for n, v in self._groups.items() if v is view), None) if view is not None else None

    def views(self) -> list[Any]:
        return [self.widget(i) for i in range(self.count())]

    def set_theme(self, dark: bool) -> None:
        self.dark = dark
        for i in range(self.count()):  # tab icons are drawn in the theme's text colour
            self.setTabIcon(i, icon("node" if i == 0 else "group"))
        for view in self.views():
            if hasattr(view, "set_theme"):
                view.set_theme(dark)

    def set_overview(self, on: bool) -> None:
        self.overview = on
        for view in self.views():
            if hasattr(view, "overview"):
                view.overview.set_wanted(on)

    # ---- groups -------------------------------------------------------
    def open_group(self, name: str) -> bool:
        """Show the body of group ``name`` on its own tab (reusing an open one).

        The canvas's ``openGroupRequested`` passes a node id: a Group/Repeat (or
        coupling) node opens the group its params name.
        """
        node = self.current_graph().nodes.get(name)
        if name not in self.document.graph.groups and node is not None:
            refs = [v for v in node.params.values() if isinstance(v, str) and v in self.document.graph.groups]
            name = node.params.get("group", refs[0] if refs else name)
        if name in self._groups:
            self.setCurrentWidget(self._groups[name])
            return True
        body = self.document.graph.groups.get(name)
        if body is None:
            self.message.emit(f"There is no group '{name}' in this project")
            return False
        self._add_group_tab(name, body, current=True)
        return True

    def show_in_group(self, name: str, node_id: str) -> bool:
        """Ctrl+F chose a node inside group ``name``'s body: its tab, with the node selected and shown."""
        if not self.open_group(name):
            return False
        view: Any = self._groups[name]

        def reveal() -> None:  # after the new tab's own first fit, which is queued before this
            if node_id in view.graph.nodes:
                view.select_nodes([node_id])
                view.reveal_node(node_id)
                self.message.emit(f"Found {node_id} in group {name}")

        QTimer.singleShot(0, reveal)
        return True

    def _add_group_tab(self, name: str, body: Graph, current: bool) -> None:
        view = self._make_view(body)
        self._groups[name] = view
        if hasattr(view, "lay_out_if_stacked") and view.lay_out_if_stacked():
            self.message.emit(STACKED_NOTE)
        index = self.addTab(view, icon("group"), name)
        if current:
            self.setCurrentIndex(index)
        # Open on the whole body, as Blender does on Tab: fit now, and again as the tab gets its
        # size or the window is resized, until the user zooms or pans (as the main tab does).
        fit = getattr(view, "fit_by_itself", None)
        if fit is not None:
            fit()
            QTimer.singleShot(0, view, fit)

    def open_selected_group(self) -> bool:
        """Tab on a selected Group/Repeat node: open its body."""
        if self._refuse_read_only("its groups open only in an editable project"):
            return False
        graph, ids = self.current_graph(), self.current_view().selected_node_ids()
        for node_id in ids:
            node = graph.nodes.get(node_id)
            group = node.params.get("group") if node is not None else None
            if group:
                return self.open_group(group)
        self.message.emit("Select a Group or Repeat node to open its body (Tab)")
        return False

    def group_selection(self) -> bool:
        """Ctrl+G: collapse the selected nodes of this canvas (main or a group body) into a Group node."""
        from revstudio.core.graph import GraphError
        from revstudio.core.grouping import group_nodes

        if self._refuse_read_only("nothing here can be grouped"):
            return False
        view = self.current_view()
        ids = list(view.selected_node_ids())
        if not ids:
            self.message.emit("Select the nodes to group first (Ctrl+G)")
            return False
        try:
            cmd = group_nodes(self.current_graph(), ids, project=self.document.graph)
        except GraphError as exc:
            self.message.emit(f"Cannot group: {exc}")
            return False
        self.document.push(cmd)
        view.select_nodes([cmd.node_id])
        self.message.emit(f"Grouped {len(ids)} node{'s' * (len(ids) != 1)} into {cmd.node_id} (Tab opens it)")
        return True

    def ungroup_selection(self) -> bool:
        """Ctrl+Shift+G: replace the selected Group node by its body's nodes."""
        from revstudio.core.grouping import ungroup

        if self._refuse_read_only("nothing here can be ungrouped"):
            return False
        view, graph = self.current_view(), self.current_graph()
        before = set(graph.nodes)
        node = self._selected_group_node(view, graph, "Select a Group node to ungroup (Ctrl+Shift+G)",
                                         "Ungroup unpacks a Group node: Unroll Repeat (Edit) first "
                                         "turns it into Group nodes")
        if node is None or not self._push_node_edit(ungroup, graph, node, "ungroup"):
            return False
        view.select_nodes(sorted(set(graph.nodes) - before))
        return True

    def _push_node_edit(self, edit: Callable[..., Any], graph: Graph, node: str, verb: str) -> bool:
        """Push ``edit(graph, node, project=...)``'s command (one undo step); False, saying
        ``Cannot {verb} {node}: why``, where the edit refuses it (a GraphError)."""
        from revstudio.core.graph import GraphError

        try:
            cmd = edit(graph, node, project=self.document.graph)
        except GraphError as exc:
            self.message.emit(f"Cannot {verb} {node}: {exc}")
            return False
        self.document.push(cmd)
        return True

    def _selected_group_node(self, view: Any, graph: Graph, ask: str, on_repeat: str) -> str | None:
        """The first selected Group node's id; None (saying ``ask``) where none is selected, and
        ``on_repeat`` where a Repeat node is (a Repeat looks like a Group on the canvas)."""
        selected = [n for n in view.selected_node_ids() if n in graph.nodes]
        groups = [n for n in selected if graph.nodes[n].type == "Group"]
        if not groups:
            repeats = [n for n in selected if graph.nodes[n].type == "Repeat"]
            self.message.emit(f"{ask}: {repeats[0]} is a Repeat node; {on_repeat}" if repeats else ask)
            return None
        return groups[0]

    def repeat_selected_group(self) -> bool:
        """Turn the selected Group node into a Repeat of its group: same id, place and wires, one undo step."""
        from revstudio.core.group_repeat import repeat_group_node

        if self._refuse_read_only("nothing here can be changed"):
            return False
        view, graph = self.current_view(), self.current_graph()
        node = self._selected_group_node(view, graph, "Select a Group node to repeat its group",
                                         "set its times in the inspector")
        if node is None or not self._push_node_edit(repeat_group_node, graph, node, "repeat"):
            return False
        view.select_nodes([node])
        self.message.emit(f"{node} repeats group {graph.nodes[node].params['group']} twice "
                          "(set times in the inspector)")
        return True

    def unroll_selected_repeat(self) -> bool:
        """Turn the selected Repeat node into its copies as Group nodes in a row, one undo step."""
        from revstudio.core.group_repeat import unroll_repeat

        if self._refuse_read_only("nothing here can be changed"):
            return False
        view, graph = self.current_view(), self.current_graph()
        node = next((n for n in view.selected_node_ids() if n in graph.nodes and graph.nodes[n].type == "Repeat"),
                    None)
        if node is None:
            self.message.emit("Select a Repeat node to unroll it into Group nodes")
            return False
        before = set(graph.nodes)
        if not self._push_node_edit(unroll_repeat, graph, node, "unroll"):
            return False
        made = [node, *sorted(set(graph.nodes) - before)]
        view.select_nodes(made)
        self.message.emit(f"Unrolled {node} into {len(made)} Group nodes ({', '.join(made[:3])}"
                          f"{'…' if len(made) > 3 else ''}); Ctrl+Shift+G ungroups one")
        return True

    def _extend_menu(self, menu: QMenu, node_id: str) -> None:
        """Add grouping to the canvas's context menu (the canvas knows nothing of groups' tabs)."""
        view = self.current_view()
        menu.addSeparator()
        group = menu.addAction(icon("group"), "Group Selection")
        group.setShortcut(QKeySequence("Ctrl+G"))
        group.setEnabled(bool(view.selected_node_ids()))
        group.triggered.connect(self.group_selection)
        node = self.current_graph().nodes.get(node_id) if node_id else None
        if node is not None and node.type == "Group":
            ungroup = menu.addAction(icon("ungroup"), "Ungroup")
            ungroup.setShortcut(QKeySequence("Ctrl+Shift+G"))
            ungroup.triggered.connect(self.ungroup_selection)
            repeat = menu.addAction("Repeat This Group")
            repeat.setToolTip("Turn this Group node into a Repeat of its group (its wires kept)")
            repeat.triggered.connect(self.repeat_selected_group)
        if node is not None and node.type == "Repeat":
            unroll = menu.addAction("Unroll Repeat")
            unroll.setToolTip("Turn this Repeat into its copies as Group nodes in a row (its wires kept)")
            unroll.triggered.connect(self.unroll_selected_repeat)

    # ---- read-only tabs of other documents ------------------------------
    def add_read_only(self, key: str, document: Document, title: str, tooltip: str) -> Any:
        """A closable tab showing ``document``'s graph; its selection never reaches the inspector."""
        from revstudio.qt.canvas import GraphView

        view = GraphView(document)
        # what the view says it did is dropped when the document has just refused that edit
        view.message.connect(lambda text: None if getattr(document, "refusing", False) else self.message.emit(text))
        if hasattr(view, "set_theme"):
            view.set_theme(self.dark)
        view.overview.set_wanted(self.overview)
        self._read_only[key] = view
        index = self.addTab(view, icon("node"), title)
        self.setTabToolTip(index, tooltip)
        self.setCurrentIndex(index)
        view.fit_by_itself()  # and again at each resize until the user zooms or pans
        QTimer.singleShot(0, view, view.fit_by_itself)  # the tab has its size by then
        return view

    def _refuse_read_only(self, why: str) -> bool:
        if self.currentWidget() not in self._read_only.values():
            return False
        self.message.emit(f"This tab is read-only: {why}")
        return True

    def read_only_view(self, key: str) -> Any:
        return self._read_only.get(key)

    def close_read_only(self, key: str) -> None:
        view = self._read_only.pop(key, None)
        if view is not None:
            self.removeTab(self.indexOf(view))
            view.deleteLater()
            view.document.deleteLater()

    # ---- bookkeeping --------------------------------------------------
    def _watch(self, graph: Graph) -> None:
        if self._watched is not None:
            self._watched.group_changed.unsub(self._on_group_changed)
            self._watched.group_renamed.unsub(self._on_group_renamed)
        graph.group_changed.sub(self._on_group_changed)
        graph.group_renamed.sub(self._on_group_renamed)
        self._watched = graph

    def _on_group_renamed(self, old: str, new: str) -> None:
        """The same body under a new name (it comes before the rename's group_changed pair): its tab
        stays open, retitled."""
        view = self._groups.pop(old, None)
        if view is not None:
            self._groups[new] = view
            self.setTabText(self.indexOf(view), new)
        if old in self._closed_by_edit:
            self._closed_by_edit[new] = self._closed_by_edit.pop(old)

    def _on_group_changed(self, name: str, old: Graph | None, new: Graph | None) -> None:
        view = self._groups.get(name)
        if view is not None and (new is None or new is not old) and getattr(view, "graph", None) is not new:
            # The body was removed or replaced: its canvas would show a stale graph. Remembered, so
            # the undo (or redo) that brings the group back brings its tab back too.
            self._closed_by_edit[name] = view is self.currentWidget()
            self._close_view(name)
        if (new is not None and name in self._closed_by_edit and name not in self._groups
                and (self.document.replaying or old is not None)):
            self._add_group_tab(name, new, current=self._closed_by_edit.pop(name))

    def _close_view(self, name: str) -> None:
        view = self._groups.pop(name, None)
        if view is not None:
            self.removeTab(self.indexOf(view))
            view.deleteLater()

    def _close_tab(self, index: int) -> None:
        name = next((n for n, v in self._groups.items() if v is self.widget(index)), None)
        if name is not None:
            self._close_view(name)
        key = next((k for k, v in self._read_only.items() if v is self.widget(index)), None)
        if key is not None:
            self.close_read_only(key)

    def _on_graph_replaced(self) -> None:
        # The main scene follows the document and rebuilds itself; group tabs showed
        # bodies of the old project, so they go.
        for name in list(self._groups):
            self._close_view(name)
        self._closed_by_edit.clear()  # another project: its groups' tabs never come back
        self._watch(self.document.graph)
        self.setCurrentIndex(0)
        view = self.main_view()
        if hasattr(view, "lay_out_if_stacked") and view.lay_out_if_stacked():
            self.message.emit(STACKED_NOTE)
        # Once laid out, show the saved zoom/centre of the project (or everything).
        QTimer.singleShot(0, self.restore_view)

    def restore_view(self) -> None:
        view = self.main_view()
        if view is not None:
            view.restore_view_state(dict(self.document.graph.view))

    def store_view(self) -> None:
        """Put the main canvas's zoom and centre in the project's ``view`` (saved with it), once the
        user zoomed or panned: a view the canvas made by itself depends on the window's size and
        would change the file of a teammate who only opened and saved it."""
        view = self.main_view()
        if view is not None and view.moved_by_user():
            self.document.graph.view = {**self.document.graph.view, **view.view_state()}
            view.view_saved()

    def _on_view_selection(self, view: Any, ids: list) -> None:
        if view is self.currentWidget():
            self.selectionChanged.emit(self.current_graph(), list(ids))

    def _on_current(self, _index: int) -> None:
        view: Any = self.currentWidget()
        if view is not None and view in self._read_only.values():
            self.selectionChanged.emit(self.document.graph, [])  # the inspector shows the project
        elif view is not None:
            self.selectionChanged.emit(self.current_graph(), list(view.selected_node_ids()))

    def rename_main(self, text: str) -> None:
        self.setTabText(0, text)
