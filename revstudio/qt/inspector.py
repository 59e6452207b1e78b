"""The inspector: parameters and read-only facts of the selected node.

Editors come from each parameter's kind (:mod:`revstudio.qt.param_editors`);
every commit pushes one ``SetParam`` through the document's undo stack. Facts
(shapes, parameter count, memory per mode, region membership or the near-miss
explanation) are read from the latest check report and refresh after each edit.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from revstudio.core import node_reference
from revstudio.core.commands import RenameNode, SetParam
from revstudio.core.graph import Graph, Node
from revstudio.core.spec import registry
from revstudio.core.validate import groups_containing, missing_type_text
from revstudio.qt.canvas.rename import rename_problem
from revstudio.qt.document import Document
from revstudio.qt.inspector_facts import InspectorFacts
from revstudio.qt.memory_figures import BatchField
from revstudio.qt.param_commit import ParamCommitter
from revstudio.qt.param_editors import GroupEditor, ParamEditor, make_editor
from revstudio.qt.theme import icon


def _label(text: str, name: str = "", wrap: bool = True) -> QLabel:
    label = QLabel(text)
    if name:
        label.setObjectName(name)
    label.setWordWrap(wrap)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class Inspector(InspectorFacts, QWidget):
    """Shows the selected node of the current canvas (or a project summary)."""

    openGroupRequested = Signal(str)
    renameGroupRequested = Signal(str)
    message = Signal(str)  # for the status bar: what an edit made here did

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.graph: Graph = document.graph
        self.node_id: str | None = None
        self.selection: list[str] = []
        self.editors: dict[str, ParamEditor] = {}
        self._labels: dict[str, QLabel] = {}
        self._watched: Graph | None = None
        self._stale = False  # the selection's form waits for the edit's re-check and its paint
        self.committer = ParamCommitter(document)
        self._removed_timer = QTimer(self)
        self._removed_timer.setSingleShot(True)
        self._removed_timer.timeout.connect(lambda: self.set_selection(self.graph, self.selection))

        scroll = self.scroller = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # text wraps instead
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._body = QWidget()
        self._layout = QVBoxLayout(self._body)
        self._layout.setContentsMargins(12, 10, 12, 12)
        self._layout.setSpacing(4)
        scroll.setWidget(self._body)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

        # The node's id, editable (Blender's name field): Enter renames it, as one undoable step.
        self.title = QLineEdit()
        self.title.setObjectName("inspectorTitle")
        self.title.setToolTip("The node's id: type a new one and press Enter to rename it")
        self.title.editingFinished.connect(self._rename)
        self.rename_error = _label("", "paramError")
        self.rename_error.hide()
        self.type_label = _label("", "inspectorType")
        self.help = _label("", "inspectorHelp")
        self.help.setTextFormat(Qt.TextFormat.PlainText)  # the node reference's text: its lines as lines
        self.form_title = _label("PARAMETERS", "sectionTitle")
        self.form_host = QWidget()
        self.form = QFormLayout(self.form_host)
        self.form.setContentsMargins(0, 4, 0, 4)
        self.form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.open_group = QPushButton("Open Group Body (Tab)")
        self.open_group.setIcon(icon("group"))
        self.open_group.clicked.connect(self._on_open_group)
        self.rename_group = QPushButton("Rename Group…")  # beside the pick-list, which only picks
        self.rename_group.clicked.connect(lambda: self._emit_group(self.renameGroupRequested))
        self.facts_title = _label("FACTS", "sectionTitle")
        self.facts = _label("", "")
        self.facts.setTextFormat(Qt.TextFormat.RichText)
        # a rich-text table's height-for-width runs high: spare height goes below, not above
        self.facts.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.facts.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        # the batch behind the memory figures, editable beside them in the project's facts
        self.batch_host = QWidget()
        batch_row = QFormLayout(self.batch_host)
        batch_row.setContentsMargins(0, 4, 0, 4)
        self.batch_field = BatchField(document, self.batch_host)
        self.batch_field.setPrefix("")
        batch_row.addRow(_label("Batch size", "paramLabel", wrap=False), self.batch_field)
        for w in (self.title, self.rename_error, self.type_label, self.help, self.form_title, self.form_host,
                  self.open_group, self.rename_group, self.facts_title, self.batch_host, self.facts):
            self._layout.addWidget(w)
        self._layout.addStretch(1)

        # The facts hold memory figures (kept and peak of one state): they follow the walked
        # estimate, which comes after every analysis (at once, or after the edit's first paint).
        document.estimateChanged.connect(self.refresh_facts)
        document.analysisChanged.connect(self._after_analysis)
        document.estimateWaiting.connect(self._facts_waiting)
        document.graphReplaced.connect(self._on_graph_replaced)
        document.pathChanged.connect(self._on_path_changed)
        self.set_selection(document.graph, [])

    # ---- selection ------------------------------------------------------
    def set_selection(self, graph: Graph, node_ids: list[str]) -> None:
        """Show ``node_ids`` of ``graph`` (the main graph or a group body)."""
        self._removed_timer.stop()
        self._watch(graph)
        self.graph = graph
        self.selection = [n for n in node_ids if n in graph.nodes]
        node_id = self.selection[0] if len(self.selection) == 1 else None
        if node_id != self.node_id or not self.editors or node_id is None or self._stale:
            self.node_id = node_id
            if self.document.bringing_back and self.document.recheck_pending() and node_id is not None:
                # an undo selecting the node it brought back: the canvas shows the edit checked
                # first, and the form and facts (of the checked node) follow after that paint
                # (an edit's own selection, as a rename's new id, is shown at once, as before)
                self._stale = True
                return
            self._stale = False
            self._rebuild()
            self._chain_tab_order()
        self.refresh_facts()

    def _after_analysis(self) -> None:
        if self._stale:
            QTimer.singleShot(0, self._catch_up)  # (after the repaint the analysis posted)

    def _catch_up(self) -> None:
        if self._stale:
            self._stale = False
            self._rebuild()
            self._chain_tab_order()
            if not self.document.estimate_pending:
                self.refresh_facts()
            # else its figures are being walked: they come with its estimateChanged (greyed
            # meanwhile, as after any edit), not walked here before the edit's first paint

    def _chain_tab_order(self) -> None:
        """Tab walks the Inspector top to bottom. Editors are made after the window's other
        widgets, so by default Tab went from the title to History and the Output tabs, and
        reached the parameters only after the status bar."""
        fields = [e.field or e for e in self.editors.values()]  # the line edit, combo or check box
        chain: list[QWidget] = [self.title, *fields, self.open_group, self.rename_group, self.batch_field]
        for first, second in zip(chain, chain[1:], strict=False):
            QWidget.setTabOrder(first, second)

    def _on_path_changed(self, _path: str) -> None:
        if self._node() is None:
            self._show_summary()  # Save As may have renamed the project

    def _on_graph_replaced(self) -> None:
        self.set_selection(self.document.graph, [])

    def _watch(self, graph: Graph) -> None:
        if self._watched is graph:
            return
        if self._watched is not None:
            self._watched.param_changed.unsub(self._on_param_changed)
            self._watched.node_removed.unsub(self._on_node_removed)
            self._watched.group_changed.unsub(self._on_groups_changed)
        graph.param_changed.sub(self._on_param_changed)
        graph.node_removed.sub(self._on_node_removed)
        graph.group_changed.sub(self._on_groups_changed)
        self._watched = graph

    def _node(self) -> Node | None:
        return self.graph.nodes.get(self.node_id) if self.node_id else None

    # ---- editors --------------------------------------------------------
    def _rebuild(self) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self.editors.clear()
        self._labels = {}
        node = self._node()
        self.open_group.setVisible(self._group_of(node) is not None)
        self.rename_group.setVisible(self._group_of(node) is not None)
        self.title.setReadOnly(node is None)
        self.rename_error.hide()
        peers = self._peers()
        if node is None:
            self._show_summary()
            if not peers:
                return
            node = peers[0]  # several nodes of one type: their shared parameters, edited together
        spec = registry.find(node.type)
        if not peers:
            self.title.setText(node.id)
            self.type_label.setText(spec.display_name if spec else node.type)
            missing = missing_type_text(node.type, getattr(self.graph, "plugins", {}).get(node.type), registry)
            if spec is not None:
                self.help.setText(node_reference.brief(spec))
            elif missing:  # its params and wires stay as the file has them, and are saved back
                self.help.setText(missing[:1].upper() + missing[1:] + ". Its parameters and wires are kept.")
            else:
                self.help.setText(f"Unknown node type '{node.type}': fix the type in the file or delete this node.")
        else:
            self.type_label.setText(f"{len(peers)} × {spec.display_name if spec else node.type}")
            self.help.setText("A value set here applies to every selected node, as one undoable step; "
                              "an empty field shows values that differ.")
        self.help.setVisible(True)
        params = dict(spec.params) if spec else {}
        self.form_title.setVisible(bool(params) or bool(node.params))
        self.form_host.setVisible(bool(params) or bool(node.params))
        for name, param in params.items():
            editor = make_editor(name, param, self.form_host)
            if isinstance(editor, GroupEditor):
                editor.set_groups(*self._group_choices())
            values = [p.params.get(name) for p in peers] if peers else [node.params.get(name)]
            editor.set_value(values[0] if all(v == values[0] for v in values) else None)
            editor.committed.connect(lambda value, n=name: self._commit(n, value))
            editor.invalid.connect(lambda n=name: self.committer.revert(self.graph, self._targets(), n))
            editor.finished.connect(self.committer.finish)
            label = _label(name, "paramLabel", wrap=False)
            self._labels[name] = label
            label.setToolTip(editor.toolTip())
            label.setProperty("modified", name in node.params)
            self.form.addRow(label, editor)
            self.editors[name] = editor
        # Parameters a file set that the spec does not know: visible, so the user can see the error.
        for name in ([] if peers else node.params):
            if name not in params:
                if spec is not None:  # a known type: the stray value can go, here
                    self.form.addRow(_label(name, "paramLabel"), self._unknown_param(node.id, name))
                    continue
                text = (f"{node.params[name]!r} (kept)" if missing else
                        f"unknown parameter = {node.params[name]!r}; delete it in the file")
                self.form.addRow(_label(name, "paramLabel"), _label(text, "paramError"))

    def _unknown_param(self, node_id: str, name: str) -> QWidget:
        """'unknown parameter = 1  [Remove]': a param the node's type does not have."""
        row = QWidget()
        box = QHBoxLayout(row)
        box.setContentsMargins(0, 0, 0, 0)
        value = self.graph.nodes[node_id].params[name]
        box.addWidget(_label(f"unknown parameter = {value!r}", "paramError"), 1)
        remove = QPushButton("Remove")
        remove.setObjectName(f"removeParam_{name}")
        remove.setToolTip(f"Delete '{name}' from {node_id}: its type has no such parameter (one undoable step)")
        # pushed once the click is over: the rebuild that follows deletes this button
        remove.clicked.connect(lambda _c=False: QTimer.singleShot(0, lambda: self._remove_param(node_id, name)))
        box.addWidget(remove)
        return row

    def _remove_param(self, node_id: str, name: str) -> None:
        node = self.graph.nodes.get(node_id)
        if node is None or name not in node.params:
            return
        cmd = SetParam(self.graph, node_id, name, None)
        cmd.text = f"Remove {node_id}.{name}"
        self.document.push(cmd)
        self.message.emit(f"Removed the unknown parameter {name} from {node_id}")

    def _group_of(self, node: Node | None) -> str | None:
        """The body a Group/Repeat node refers to, if it exists in the project."""
        if node is None or self.graph is not self.document.graph:
            return None
        spec = registry.find(node.type)
        for name, param in (spec.params.items() if spec else ()):
            value = node.params.get(name)
            if param.kind == "group" and value in self.document.graph.groups:
                return str(value)
        return None

    def _on_open_group(self) -> None:
        self._emit_group(self.openGroupRequested)

    def _emit_group(self, signal: Any) -> None:
        name = self._group_of(self._node())
        if name:
            signal.emit(name)

    def _group_choices(self) -> tuple[list[str], set[str]]:
        """The groups a group parameter may name here, and those it may not: inside a group's body,
        that group and every group that uses it (a node there naming one would make the group
        contain itself)."""
        groups = self.document.graph.groups
        owner = next((n for n, body in groups.items() if body is self.graph), None)
        containing = groups_containing(groups, registry, owner) if owner is not None else set()
        return [n for n in groups if n not in containing], containing

    def _show_summary(self) -> None:
        g = self.document.graph
        self.form_title.hide()
        self.form_host.hide()
        if len(self.selection) > 1:
            self.title.setText(f"{len(self.selection)} nodes selected")
            self.type_label.setText("")
            self.help.setText("Select a single node to edit its parameters. Ctrl+G groups the selection.")
        elif self.graph is not g:
            name = next((n for n, body in g.groups.items() if body is self.graph), "group")
            self.title.setText(name)
            self.type_label.setText("Group body")
            self.help.setText("The inside of a group: its GroupInput and GroupOutput nodes are the "
                              "ports of every Group node that uses it. Select a node to edit it.")
        else:
            self.title.setText(g.name or "untitled")
            self.type_label.setText("Project")
            self.help.setText("Select a node on the canvas to edit its parameters, "
                              "or drag a node type from the palette.")

    def _rename(self) -> None:
        node = self._node()
        new = self.title.text().strip()
        if node is None or self.title.isReadOnly() or new == node.id:
            return
        problem = rename_problem(self.graph, new)
        if problem is not None:
            self.rename_error.setText(f"Not renamed: {problem}")
            self.rename_error.show()
            self.title.setText(node.id)
            return
        old = node.id
        self.document.push(RenameNode(self.graph, old, new))
        self.set_selection(self.graph, [new])
        self.message.emit(f"Renamed {old} to {new}")  # as a rename on the canvas says

    def _peers(self) -> list[Node]:
        """The selected nodes when there are several and all have one type, else []."""
        nodes = [self.graph.nodes[n] for n in self.selection if n in self.graph.nodes]
        if len(nodes) > 1 and len({n.type for n in nodes}) == 1 and registry.find(nodes[0].type) is not None:
            return nodes
        return []

    def _targets(self) -> list[Node]:
        node = self._node()
        return [node] if node is not None else self._peers()

    def _commit(self, name: str, value: Any) -> None:
        self.committer.commit(self.graph, self._targets(), name, value)

    def _on_param_changed(self, node: Node, name: str, old: Any, new: Any) -> None:
        peers = self._peers() if self.node_id is None else []
        if peers and node in peers and name in self.editors:  # a shared edit (or its undo)
            values = [p.params.get(name) for p in peers]
            self.editors[name].set_value(values[0] if all(v == values[0] for v in values) else None)
            return
        if node.id != self.node_id:
            return
        if name not in self.editors:  # an unknown param removed (or back by undo): its row follows
            self._rebuild()
            return
        editor = self.editors.get(name)
        if editor is not None:
            editor.set_value(new)
        self.open_group.setVisible(self._group_of(node) is not None)
        self.rename_group.setVisible(self._group_of(node) is not None)
        label = self._labels.get(name)
        if label is not None:
            label.setProperty("modified", new is not None)
            label.style().unpolish(label)
            label.style().polish(label)

    def _on_node_removed(self, node: Node) -> None:
        if node.id in self.selection and self.graph.nodes.get(node.id) is None:
            self.selection = [n for n in self.selection if n != node.id]
            if node.id == self.node_id:
                self.set_selection(self.graph, self.selection)
            else:  # a delete of 1,000 selected nodes refreshes the facts once, not once per node
                self._removed_timer.start()

    def _on_groups_changed(self, *args: Any) -> None:
        for editor in self.editors.values():
            if isinstance(editor, GroupEditor):
                editor.set_groups(*self._group_choices())

    # ---- facts ----------------------------------------------------------
    def refresh_facts(self) -> None:
        if self._stale:  # (they come with the form, right after the edit's first paint)
            return
        if self.document.estimate_pending:
            # (a selection while an edit's figures are walked): walk them now; its estimateChanged
            # refreshes, so no figure of the state before the edit is shown beside this one's
            self.document.finish_estimate()
            return
        from revstudio.qt.memory_figures import show_waiting

        show_waiting(self.facts, False)
        report = self.document.report
        node = self._node()
        self.batch_host.setVisible(node is None and self.graph is self.document.graph
                                   and len(self.selection) <= 1)
        if node is None:
            self.facts.setText(self._summary_facts(report))
        else:
            self.facts.setText(self._node_facts(report, node))
        self._fit_facts()

    def _facts_waiting(self) -> None:
        from revstudio.qt.memory_figures import show_waiting

        show_waiting(self.facts, True)

    def _fit_facts(self) -> None:
        # A wrapped rich-text label in a scroll area is laid out at a stale width and its
        # last lines (the warning) get cut where the History panel starts: size it for its width.
        width = self.facts.width() if self.facts.isVisible() else self._body.width() - 24
        self.facts.setMinimumHeight(self.facts.heightForWidth(max(width, 60)))

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._fit_facts()
