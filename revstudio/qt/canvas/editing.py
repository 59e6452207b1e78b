"""The editing actions of a canvas view: add, delete, clipboard, align, layout, connect, find
(quick add is :mod:`.quick_add_actions`).

:class:`EditingMixin` is mixed into ``GraphView``: each public method turns one
user intent into exactly one core command pushed through the document (or a
message saying why nothing happened). Kept apart from the view's input handling
so each file stays about one thing.
"""
from __future__ import annotations

import atexit
from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import QMimeData, QPoint, QPointF, QRectF, SignalInstance
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QGraphicsView

from revstudio.core.commands import (
    AddNode,
    Command,
    Connect,
    Disconnect,
    Macro,
    Move,
    remove_nodes,
    splice_into,
)
from revstudio.core.graph import Edge, Graph, Node, PortRef
from revstudio.core.group_repeat import new_node_params
from revstudio.core.spec import registry

from . import clipboard, layout
from .connect_popup import ConnectPopup, wire_choices
from .find import FindPopup, split_key
from .node_item import OUTLINE
from .node_item import WIDTH as NODE_WIDTH
from .placement import free_spot, is_free
from .quick_add import (
    QuickAddPopup,
    wire_refusal,
)
from .view_parts import ViewParts

# The undo step of the layout a graph of stacked nodes gets when it is shown (``lay_out_if_stacked``).
STACKED_LAYOUT = "Lay Out Stacked Nodes"


def release_clipboard() -> None:
    """Hand copied nodes over to the clipboard as text Qt owns, before the interpreter goes.

    The QMimeData ``copy`` puts there is a Python object; the clipboard deletes it only
    at process exit, after Python has finalised, and that deletion segfaulted the exit
    (offscreen: every test run that copied last; ``revstudio`` quit after a copy). Paste
    reads the same JSON from plain text, so nothing copied is lost.
    """
    if QGuiApplication.instance() is None:
        return  # the application (and its clipboard with the data) is gone already
    board = QGuiApplication.clipboard()
    data = board.mimeData() if board is not None else None
    if data is not None and data.hasFormat(clipboard.MIME):
        board.setText(data.text())

_release_registered = False


def _release_at_exit() -> None:
    """Release the clipboard when the interpreter exits, whatever made the QApplication: the
    editor's ``run_app`` does so after its event loop, but a script or benchmark that builds
    its own window and copies (``benchmarks/bench_editor_actions.py``) ended in SIGSEGV."""
    global _release_registered
    if not _release_registered:
        _release_registered = True
        atexit.register(release_clipboard)


class EditingMixin(ViewParts):
    """Edit actions for a view that has ``document``, ``graph``, ``_scene`` and ``message``."""

    if TYPE_CHECKING:  # provided by GraphView (and ViewParts' declarations)
        popup: QuickAddPopup | None
        findInGroup: SignalInstance  # noqa: N815 - a Qt signal: (group, node id) a Find chose in that body
        _paste_count: int
        _last_paste_at: tuple[float, float] | None
        _last_scene_pos: QPointF

        def cursor_in_view(self) -> QPointF | None: ...

        def select_nodes(self, ids: list[str]) -> None: ...
        def selected_node_ids(self) -> list[str]: ...
        def fit_all(self) -> None: ...
        def reveal_node(self, node_id: str) -> bool: ...
        def reveal_nodes(self, ids: list[str]) -> bool: ...
        def cursor_scene_pos(self) -> QPointF: ...

    def _widget(self) -> QGraphicsView:
        return cast(QGraphicsView, self)  # the mixin only ever lives in GraphView

    def _project(self) -> Graph:
        """The graph that owns the groups (a body scene shares its project's groups)."""
        return self.document.graph

    def _new_params(self, type_id: str) -> dict[str, Any]:
        """A new Group/Repeat node takes the project's only group (not inside that group's body)."""
        return new_node_params(type_id, self._project(), self._scene.group_name())

    def add_node_at(self, type_id: str, scene_pos: QPointF | tuple[float, float],
                    params: dict[str, Any] | None = None) -> str | None:
        """Add a node of ``type_id`` (with ``params``, or a new node's) with its top-left at
        ``scene_pos``; returns its id."""
        spec = registry.find(type_id)
        if spec is None:
            self.message.emit(f"Cannot add {type_id!r}: there is no such node type; pick one from the palette")
            return None
        x, y = (scene_pos.x(), scene_pos.y()) if isinstance(scene_pos, QPointF) else scene_pos
        node = Node(self.graph.unique_id(spec.type_id), spec.type_id,
                    dict(params) if params is not None else self._new_params(spec.type_id),
                    (float(round(x)), float(round(y))))
        self.document.push(AddNode(self.graph, node))
        self.select_nodes([node.id])
        return node.id

    def insert_node_on_wire(self, type_id: str, edge: Edge, scene_pos: QPointF) -> str | None:
        """Add a node centred at ``scene_pos`` and splice it into ``edge`` (one undo step).

        If the type has no input or output, or cannot take the wire's tensor, the
        node is added next to the wire instead and the message says why.
        """
        spec = registry.find(type_id)
        if spec is None or edge not in self.graph.edges:
            return self.add_node_at(type_id, scene_pos)
        params = {**spec.defaults(), **self._new_params(spec.type_id)}
        try:
            ins = spec.input_ports(params, self.graph.groups)
            outs = spec.output_ports(params, self.graph.groups)
        except Exception:  # ports that depend on a group not chosen yet
            ins, outs = (), ()
        shape = self._scene.shape_of(edge.src)
        why = ""
        if not ins or not outs:
            why = f"{spec.display_name} needs an input and an output to sit on a wire"
        else:
            why = wire_refusal(spec.display_name, spec, shape, edge.src, self.graph.groups, params) or ""
        if why:
            new_id = self.add_node_at(type_id, scene_pos)
            self.message.emit(f"Added {new_id} beside the wire: {why}")
            return new_id
        node = Node(self.graph.unique_id(spec.type_id), spec.type_id, self._new_params(spec.type_id),
                    (float(round(scene_pos.x() - NODE_WIDTH / 2)), float(round(scene_pos.y() - 30.0))))
        self.document.push(Macro(f"Insert {node.id} into {edge}", [
            AddNode(self.graph, node), *splice_into(self.graph, node.id, edge, ins[0], outs[0])]))
        self.select_nodes([node.id])
        self.message.emit(f"Inserted {node.id} between {edge.src} and {edge.dst}")
        return node.id

    def delete_selection(self) -> None:
        ids = self.selected_node_ids()
        gone = set(ids)
        edges = [e for e in self._scene.selected_edges() if e.src.node not in gone and e.dst.node not in gone]
        if not ids and not edges:
            self.message.emit("Nothing selected to delete")
            return
        children: list[Command] = [Disconnect(self.graph, e) for e in edges]
        if ids:
            removal = remove_nodes(self.graph, ids)
            # History and Edit > Undo name the step as the menu item ("Delete f", not core's "Remove f")
            removal.text = f"Delete {ids[0]}" if len(ids) == 1 else f"Delete {len(ids)} nodes"
            children.append(removal)
        if len(children) == 1:
            self.document.push(children[0])
        else:
            self.document.push(Macro("Delete " + " and ".join(
                f"{n} {word}{'s' * (n != 1)}" for n, word in ((len(ids), "node"), (len(edges), "wire")) if n),
                children))
        self.message.emit("Deleted " + " and ".join(
            f"{n} {word}{'s' * (n != 1)}" for n, word in ((len(ids), "node"), (len(edges), "wire")) if n))

    def delete_and_reconnect(self) -> None:
        """Delete the selected nodes and join what fed them to what they fed: each wire leaving
        the selection is traced back through the deleted nodes, by each one's first wired input,
        to the port outside that fed it (taking a Conv out of a chain keeps the chain)."""
        ids = self.selected_node_ids()
        if not ids:
            self.message.emit("Nothing selected to delete")
            return
        graph, gone = self.graph, set(ids)

        def source(ref: PortRef) -> PortRef | None:
            seen: set[str] = set()
            while ref.node in gone and ref.node not in seen:
                seen.add(ref.node)
                wired = {e.dst.port: e.src for e in graph.edges_into(ref.node)}
                first = next((p for p in graph.ports(ref.node)[0] if p in wired), None)
                if first is None:
                    return None
                ref = wired[first]
            return None if ref.node in gone else ref

        joins = []
        for nid in ids:
            for edge in graph.edges_from(nid):
                if edge.dst.node not in gone and (src := source(edge.src)) is not None:
                    joins.append(Connect(graph, src, edge.dst))
        children: list[Command] = [remove_nodes(graph, ids), *joins]
        words = f"{len(ids)} node{'s' * (len(ids) != 1)}"
        self.document.push(Macro(f"Delete {words} and reconnect", children))
        self.message.emit(f"Deleted {words}" + (f", reconnected {len(joins)} wire{'s' * (len(joins) != 1)}"
                                                 if joins else "; nothing to reconnect around them"))

    def copy(self) -> bool:
        ids = self.selected_node_ids()
        if not ids:
            self.message.emit("Nothing selected to copy")
            return False
        text = clipboard.encode(self.graph, ids)
        data = QMimeData()
        data.setData(clipboard.MIME, text.encode("utf-8"))
        data.setText(text)  # readable anywhere, and pasteable back
        QGuiApplication.clipboard().setMimeData(data)
        _release_at_exit()
        self._paste_count = 0
        self.message.emit(f"Copied {len(ids)} node{'s' * (len(ids) != 1)}")
        return True

    def cut(self) -> None:
        if self.copy():
            self.delete_selection()

    def paste(self) -> list[str]:
        """Paste at the cursor (Blender, ComfyUI); from a menu, next to the selection.

        Pasting again without moving the cursor steps each copy down and right,
        so repeated pastes never stack on one another.
        """
        data = QGuiApplication.clipboard().mimeData()
        if data is None:
            self.message.emit("The clipboard is empty")
            return []
        if data.hasFormat(clipboard.MIME):
            text = bytes(data.data(clipboard.MIME).data()).decode("utf-8", "replace")
        else:
            text = data.text()
        cursor = self.cursor_in_view()
        if cursor is not None:
            at = (round(cursor.x()), round(cursor.y()))
            if self._paste_count and self._last_paste_at == at:
                step = 40.0 * self._paste_count
                self._paste_count += 1
                return self._paste_text(text, (at[0] + step, at[1] + step), (0.0, 0.0), remember=at)
            self._paste_count = 1
            return self._paste_text(text, at, (0.0, 0.0), remember=at)
        self._paste_count = 0
        return self._paste_text(text, None, (0.0, 0.0), beside=True)

    def placement_near_selection(self, size: tuple[float, float]) -> QPointF:
        """Free space right of the selection, or around the middle of the view."""
        ids = self.selected_node_ids()
        if ids:  # the cards themselves, as a node's pos is its card's corner (not its outline's)
            near = self._scene.nodes_rect(ids).adjusted(OUTLINE, OUTLINE, -OUTLINE, -OUTLINE)
        else:
            view = self._widget()
            centre = view.mapToScene(view.viewport().rect().center())
            near = QRectF(centre.x() - size[0] / 2, centre.y() - size[1] / 2, size[0], size[1])
            if is_free(self._scene, near):
                return near.topLeft()
            near = QRectF(centre.x() - size[0] / 2 - size[0] - 60, near.top(), size[0], size[1])
        return free_spot(self._scene, size, near)

    def _free_at(self, pos: QPointF, size: tuple[float, float]) -> QPointF:
        """``pos`` (whole pixels) if no node is there, else free space beside the nodes that are:
        Tab, Tab, Tab at one pointer adds a row, not a stack that hides all but the last."""
        rect = QRectF(round(pos.x()), round(pos.y()), size[0], size[1])
        under = [n for n, item in self._scene.node_items.items() if item.sceneBoundingRect().intersects(rect)]
        if not under:
            return rect.topLeft()
        spot = free_spot(self._scene, size, self._scene.nodes_rect(under))
        return QPointF(round(spot.x()), round(spot.y()))

    def add_node_beside_selection(self, type_id: str) -> str | None:
        """The palette's Enter / double-click: a new node in free space next to the selection."""
        spot = self.placement_near_selection((NODE_WIDTH, 90.0))
        return self.add_node_at(type_id, QPointF(round(spot.x()), round(spot.y())))

    def duplicate(self) -> list[str]:
        ids = self.selected_node_ids()
        if not ids:
            self.message.emit("Nothing selected to duplicate")
            return []
        # Blender's Shift+D: the copy appears beside the original, in free space
        return self._paste_text(clipboard.encode(self.graph, ids), None, (0.0, 0.0), beside=True,
                                verb=("Duplicate", "Duplicated"))

    def _paste_text(self, text: str, at: tuple[float, float] | None, offset: tuple[float, float],
                    remember: tuple[float, float] | None = None, beside: bool = False,
                    verb: tuple[str, str] = ("Paste", "Pasted")) -> list[str]:
        if beside:  # no cursor on the canvas: put the copies in free space beside the selection
            try:
                nodes, _, _ = clipboard.decode(text)
            except clipboard.ClipboardError:
                nodes = []
            if nodes:
                xs, ys = [n.pos[0] for n in nodes], [n.pos[1] for n in nodes]
                size = (max(xs) - min(xs) + NODE_WIDTH, max(ys) - min(ys) + 90.0)
                spot = self.placement_near_selection(size)
                at = (round(spot.x()), round(spot.y()))
        try:
            cmd, mapping, groups = clipboard.paste_command(self._project(), self.graph, text, at=at, offset=offset)
        except clipboard.ClipboardError as exc:
            self.message.emit(f"Cannot {verb[0].lower()}: {exc}")
            return []
        if verb[0] != "Paste":  # History, Undo and its message name the gesture ("Duplicate conv1")
            cmd.text = verb[0] + cmd.text.removeprefix("Paste")
        self.document.push(cmd)
        self._last_paste_at = remember
        new = list(mapping.values())
        self.select_nodes(new)
        self.message.emit(clipboard.paste_message(verb[1], mapping, groups))
        return new

    def _rects(self, ids: list[str]) -> dict[str, tuple[float, float, float, float]]:
        out = {}
        for n in ids:
            item = self._scene.node_items[n]
            out[n] = (item.pos().x(), item.pos().y(), NODE_WIDTH, item.height)
        return out

    def _push_moves(self, moves: dict[str, tuple[float, float]], text: str) -> bool:
        changed = {k: v for k, v in moves.items() if self.graph.node(k).pos != (float(v[0]), float(v[1]))}
        if not changed:
            self.message.emit(f"{text}: nothing to move")
            return False
        cmd = Move(self.graph, changed)
        cmd.text = text
        self.document.push(cmd)
        self.message.emit(f"{text}: moved {len(changed)} node{'s' * (len(changed) != 1)}")
        return True

    def align(self, axis: str) -> bool:
        """Line up the selected nodes: left/right/top/bottom edges, or centres (horizontal/vertical)."""
        ids = self.selected_node_ids()
        if len(ids) < 2:
            self.message.emit("Select at least two nodes to align")
            return False
        try:
            moves = layout.align(axis, self._rects(ids))
        except ValueError as exc:
            self.message.emit(str(exc))
            return False
        return self._push_moves(moves, f"Align {axis}")

    def distribute(self, axis: str) -> bool:
        """Space the selected nodes evenly (horizontal/vertical); the outermost two stay put."""
        ids = self.selected_node_ids()
        if len(ids) < 3:
            self.message.emit("Select at least three nodes to distribute")
            return False
        return self._push_moves(layout.distribute(axis, self._rects(ids)), f"Distribute {axis}")

    def lay_out_if_stacked(self) -> bool:
        """Auto Layout a graph whose nodes lie on one another (a file or script that gave them no
        positions: they opened as one pile of cards), as one undoable step named ``STACKED_LAYOUT``.
        A layout the editor made itself is no unsaved edit: a document clean before stays clean, so
        closing it unedited asks nothing (a save writes the positions with the next edit's)."""
        if not layout.stacked(n.pos for n in self.graph.nodes.values()):
            return False
        stack = self.document.undo_stack
        clean = stack.isClean()
        done = self.auto_layout(False, STACKED_LAYOUT)
        if done and clean:
            stack.setClean()
        return done

    def auto_layout(self, selection_only: bool = False, text: str | None = None) -> bool:
        """Layered left-to-right layout of the selection (kept in place) or the whole graph."""
        ids = self.selected_node_ids() if selection_only else list(self.graph.nodes)
        if not ids:
            self.message.emit("Nothing to lay out")
            return False
        rects = self._rects(ids)
        origin = (min(r[0] for r in rects.values()), min(r[1] for r in rects.values()))
        items = self._scene.node_items
        # wires attach at their ports: the layout lines ports up, not node tops
        edges = [(e.src.node, e.dst.node, items[e.src.node].port_local_pos(e.src.port, True).y(),
                  items[e.dst.node].port_local_pos(e.dst.port, False).y())
                 for e in self.graph.edges if e.src.node in rects and e.dst.node in rects]
        regions = {n: r.region_id for r in self._scene.region_items for n in r.node_ids}
        sizes = {n: (r[2], r[3]) for n, r in rects.items()}
        initial = {n: (r[0], r[1]) for n, r in rects.items()}
        moves = layout.layered_layout(ids, edges, sizes, origin=origin, initial=initial, regions=regions)
        done = self._push_moves(moves, text or ("Layout Selection" if selection_only else "Auto Layout"))  # (the menu)
        if done and not selection_only:
            # where the user was working: a selection stays in view (a 400-node graph fitted whole
            # is a thin line of specks); with none, the whole graph
            chosen = self.selected_node_ids()
            if chosen:
                self.reveal_nodes(chosen)
            else:
                self.fit_all()
        return done

    # ---- find --------------------------------------------------------------------
    def open_find(self) -> FindPopup:
        """Ctrl+F: search this canvas's nodes by id or type; the one chosen is selected and shown."""
        if self.popup is not None:
            self.popup.close()
        view = self._widget()
        project = self._project()
        elsewhere = [(name, n.id, n.type) for name, body in project.groups.items() if body is not self.graph
                     for n in body.nodes.values()]
        self.popup = FindPopup(((n.id, n.type) for n in self.graph.nodes.values()), view, elsewhere)
        self.popup.chosen.connect(self._found)
        self.popup.chosen_all.connect(self._found_all)
        self.popup.popup_at(view.mapToGlobal(view.viewport().rect().topLeft()) + QPoint(24, 24))
        return self.popup

    def _found(self, key: str) -> None:
        group, node_id = split_key(key)
        if group is not None:  # in another group's body: its tab opens on it (canvas_tabs)
            self.findInGroup.emit(group, node_id)
            return
        self.select_nodes([node_id])
        self.reveal_node(node_id)
        self.message.emit(f"Found {node_id}")

    def _found_all(self, ids: list[str]) -> None:
        """Alt+Enter in Find: every match selected and framed (the inspector edits their shared parameters)."""
        self.select_nodes(ids)
        self.reveal_nodes(ids)
        self.message.emit(f"Selected {len(ids)} nodes" + (f": {', '.join(ids[:3])}…" if len(ids) > 3
                                                          else f": {', '.join(ids)}"))

    # ---- connect by keyboard ----------------------------------------------------
    def open_connect(self) -> ConnectPopup | None:
        """Ctrl+K: the wires the selection can take or drop; Enter makes the chosen one."""
        ids = self.selected_node_ids()
        if not ids:
            self.message.emit("Connect: select a node first (Ctrl+F finds one by id), then press Ctrl+K")
            return None
        if self.popup is not None:
            self.popup.close()
        view = self._widget()
        title = f"Connect {ids[0]}" if len(ids) == 1 else f"Connect {len(ids)} selected nodes"
        popup = ConnectPopup(wire_choices(self.graph, ids), title, view)
        popup.chosen.connect(lambda key: self._connect_chosen(popup, key))
        popup.popup_at(view.mapToGlobal(view.viewport().rect().topLeft()) + QPoint(24, 24))
        self.popup = popup
        return popup

    def _connect_chosen(self, popup: ConnectPopup, key: str) -> bool:
        choice = popup.choice(key)
        self._widget().setFocus()
        if choice.disconnect:
            self.document.push(Disconnect(self.graph, Edge(choice.src, choice.dst)))
            self.message.emit(f"Disconnected {choice.src} → {choice.dst}")
            return True
        return self._scene.connect_ports(choice.src, choice.dst, replace=choice.replaces is not None)
