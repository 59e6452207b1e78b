"""The graph scene: a QGraphicsScene that observes a core Graph and the document's analysis.

The scene keeps id -> item maps and mirrors graph events (nodes, edges, params,
moves) onto items; it never stores graph facts of its own. Derived facts (wire
shapes, error outlines, region backdrops, parameter counts) are applied when the
document announces a new report (region badges come from ``region_badges``,
hover text from ``hover``). Every edit goes through ``document.push``;
gestures preview on items and commit one command at the end.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QPointF, QRectF, QTimer, Signal
from PySide6.QtWidgets import QGraphicsScene

from revstudio.core.commands import Command, Connect, Disconnect, Macro, Move, connect_replacing, splice_into
from revstudio.core.graph import Edge, Graph, Node, PortRef
from revstudio.core.spec import registry

from . import hover
from .connect_rules import connection_reason
from .display import NodeDisplay, WireLabels, format_shape, node_display, runs_groups, with_count
from .node_item import NodeItem
from .region_item import HintItem, RegionItem
from .scene_gestures import SceneGestures
from .scene_regions import SceneRegions
from .theme import Theme, theme_for
from .wire_item import WireItem
from .wiring import WireDrag

HINT_MS = 3500
ROOM = 3000.0  # scene margin around the nodes, so one can pan beyond them


class GraphScene(SceneRegions, SceneGestures):
    """Items for one graph (the project or a group body) of a document."""

    message = Signal(str)                       # status-bar text (refusals, results)
    openGroupRequested = Signal(str)            # a Group/Repeat node was double-clicked
    renameRequested = Signal(str)               # a node's header was double-clicked
    emptyChanged = Signal(bool)                 # the graph became empty / got its first node
    quickAddRequested = Signal(QPointF, object, bool)  # (scene pos, PortRef origin, origin is output)

    def __init__(self, document: Any, graph: Graph | None = None, dark: bool = True) -> None:
        super().__init__()
        self.document = document
        self._follows_document = graph is None or graph is document.graph
        self.graph: Graph = document.graph if graph is None else graph
        self.theme: Theme = theme_for(dark)
        self.node_items: dict[str, NodeItem] = {}
        self.wire_items: dict[Edge, WireItem] = {}
        self.region_items: list[RegionItem] = []
        self._wires_by_node: dict[str, set[WireItem]] = {}
        self._regions_by_node: dict[str, list[RegionItem]] = {}
        self._region_nodes: set[str] = set()
        self._wire: WireDrag | None = None
        self._room_set = False
        self._drop_wire: WireItem | None = None
        self.port_state: Any = None  # set while a wire is being drawn
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)
        self.setBackgroundBrush(self.theme.background)
        self.hint = HintItem()
        self.addItem(self.hint)
        self._hint_timer = QTimer(self)
        self._hint_timer.setSingleShot(True)
        self._hint_timer.timeout.connect(self.hide_hint)
        self._moved: list[NodeItem] = []  # moved by the model, wires not yet updated
        self._grown: set[RegionItem] = set()  # backdrops a drag grew (refitted when it ends)
        self.wires_cached = False  # wires painted from pixmaps: every view is far out (cache_wires)
        self.labels_held = False  # wires' bounds hold their labels: a view draws them (hold_labels)
        self._removed_selected: set[str] = set()  # so a renamed node keeps its selection
        self._returned: list[str] = []  # nodes an undo/redo brought back
        self._refit_timer = QTimer(self)
        self._refit_timer.setSingleShot(True)
        self._refit_timer.setInterval(0)
        self._refit_timer.timeout.connect(self.flush_moves)
        self._connections = [document.analysisChanged.connect(self.apply_analysis),
                             document.estimateChanged.connect(self.apply_estimate),
                             document.estimateWaiting.connect(self._estimate_waiting),
                             document.graphReplaced.connect(self._on_graph_replaced),
                             document.undo_stack.indexChanged.connect(self._after_step)]
        self._subscribe()
        self.rebuild()

    # ---- observing the graph ------------------------------------------
    def _handlers(self) -> list[tuple[Any, Any]]:
        g = self.graph
        return [
            (g.node_added, self._on_node_added), (g.node_removed, self._on_node_removed),
            (g.edge_added, self._on_edge_added), (g.edge_removed, self._on_edge_removed),
            (g.param_changed, self._on_param_changed), (g.node_moved, self._on_node_moved),
            (g.node_renamed, self._on_node_renamed),
        ]

    def _subscribe(self) -> None:
        for event, handler in self._handlers():
            event.sub(handler)

    def detach(self) -> None:
        """Stop observing (the view closes, or the group body tab goes away)."""
        try:
            handlers = self._handlers()
        except AttributeError:
            # The view's ``destroyed`` signal can fire while Python's cycle
            # collector is tearing down the graph and this scene together; the
            # graph's events are already gone, so there is nothing to leave.
            handlers = []
        for event, handler in handlers:
            event.unsub(handler)
        connections, self._connections = self._connections, []
        for connection in connections:  # idempotent: close and destroy may both land here
            QObject.disconnect(connection)

    def _on_graph_replaced(self) -> None:
        if not self._follows_document:
            return  # a group-body scene: the main window closes its tab
        for event, handler in self._handlers():
            event.unsub(handler)
        self.graph = self.document.graph
        self._subscribe()
        self.rebuild()

    def rebuild(self) -> None:
        """Drop every item and create them again from the graph (open, replace)."""
        self.cancel_gesture()
        self._moved.clear()
        self._grown.clear()
        for item in [*self.node_items.values(), *self.wire_items.values(), *self.region_items]:
            self.removeItem(item)
        self.node_items.clear()
        self.wire_items.clear()
        self.region_items.clear()
        self._wires_by_node.clear()
        self._regions_by_node.clear()
        self._room_set = False
        report = self.report()
        self._region_nodes = {n for r in (getattr(report, "regions", None) or ()) for n in getattr(r, "nodes", ())}
        for node in self.graph.nodes.values():
            self._add_node_item(node, report)
        for edge in self.graph.edges:
            self._add_wire_item(edge, format_shape(self.shape_of(edge.src, report)))
        self.apply_analysis(refresh_nodes=False)  # the items were just built from this report
        self._make_room(self.nodes_rect() if self.node_items else QRectF(-400, -300, 800, 600))

    def group_name(self) -> str | None:
        """The project's name for this scene's graph when it is a group body, else None."""
        if self.graph is self.document.graph:
            return None
        return next((name for name, body in self.document.graph.groups.items() if body is self.graph), None)

    def report(self) -> Any:
        """The analysis for this scene's graph; a group body uses its part of the project's
        report (shapes as seen at the group's first use), if the checker provides one."""
        report = self.document.report
        name = self.group_name()
        if name is None or report is None:
            return report if self.graph is self.document.graph else None
        return (getattr(report, "groups", None) or {}).get(name)

    def _add_node_item(self, node: Node, report: Any) -> NodeItem:
        item = NodeItem(node.id, node_display(self.graph, node.id, report, node.id in self._region_nodes))
        item.setPos(*node.pos)
        self.node_items[node.id] = item
        if len(self.node_items) == 1:
            self.emptyChanged.emit(False)
        self._wires_by_node.setdefault(node.id, set())
        self.addItem(item)
        if self._room_set:
            self._make_room(item.sceneBoundingRect())
        return item

    def _add_wire_item(self, edge: Edge, label: str | None = None) -> None:
        src, dst = self.node_items.get(edge.src.node), self.node_items.get(edge.dst.node)
        if src is None or dst is None:
            return
        wire = WireItem(edge, self.wires_cached, self.labels_held)
        if label is not None:
            wire.set_label(label, False, place=False)  # placed by the path update below
        self.wire_items[edge] = wire
        self._wires_by_node[edge.src.node].add(wire)
        self._wires_by_node[edge.dst.node].add(wire)
        self._update_wire(wire)
        self.addItem(wire)

    def _update_wire(self, wire: WireItem) -> None:
        e = wire.edge
        wire.update_path(self.node_items[e.src.node].port_scene_pos(e.src.port, True),
                         self.node_items[e.dst.node].port_scene_pos(e.dst.port, False))

    def _on_node_added(self, node: Node) -> None:
        self._add_node_item(node, None)  # counts/diagnostics arrive with the next report
        if getattr(self.document, "replaying", False):
            self._returned.append(node.id)  # undo of a delete, redo of an add: select them

    def _on_node_removed(self, node: Node) -> None:
        item = self.node_items.pop(node.id, None)
        self._wires_by_node.pop(node.id, None)
        if item is not None:
            self._removed_selected = {node.id} if item.isSelected() else set()
            self.remove_quietly(item)
            if not self.node_items:
                self.emptyChanged.emit(True)

    def _on_node_renamed(self, old: str, new: str) -> None:
        item = self.node_items.get(new)
        if item is not None and old in self._removed_selected:
            item.setSelected(True)  # a renamed node stays selected (and inspected)
        self._removed_selected = set()

    def _on_edge_added(self, edge: Edge) -> None:
        self._add_wire_item(edge)

    def _on_edge_removed(self, edge: Edge) -> None:
        wire = self.wire_items.pop(edge, None)
        if wire is None:
            return
        for end in (edge.src.node, edge.dst.node):
            self._wires_by_node.get(end, set()).discard(wire)
        self.remove_quietly(wire)

    def _on_param_changed(self, node: Node, name: str, old: Any, new: Any) -> None:
        # Ports may appear or vanish (Split sections, Merge inputs): refresh now, counts later.
        self._refresh_node(node.id, self.report())
        item = self.node_items.get(node.id)
        if item is not None:
            item.shown_for = None  # drawn from the report before this edit: the re-check redraws it

    def _on_node_moved(self, node: Node, old: Any, new: tuple[float, float]) -> None:
        item = self.node_items.get(node.id)
        if item is None:
            return
        if (item.pos().x(), item.pos().y()) != new:
            item.setPos(*new)
        # Wires and backdrops follow once the command is done (a layout moves 1,000
        # nodes, and each wire would otherwise be rebuilt once per end).
        self._moved.append(item)
        self._refit_timer.start()

    def _after_step(self) -> None:
        """After each command, undo or redo: wires follow moves; what came back is selected."""
        self.flush_moves()
        returned, self._returned = [i for i in self._returned if i in self.node_items], []
        if returned:
            self.document.bringing_back = True  # (the Inspector shows them after the edit's check)
            self.select_only(returned)
        self.flush_selection()
        self.document.bringing_back = False

    def flush_moves(self) -> None:
        """Bring wires and backdrops up to date with nodes the model just moved."""
        moved, self._moved = self._moved, []
        if moved:
            self.items_moved([i for i in moved if self.node_items.get(i.node_id) is i])
            regions = {r for i in moved for r in self._regions_by_node.get(i.node_id, ())}
            for region in regions:  # a move may shrink a backdrop too: refit it
                if region.scene() is self:
                    self._fit_region(region)

    def _refresh_node(self, node_id: str, report: Any, refit: set[RegionItem] | None = None,
                      display: NodeDisplay | None = None) -> None:
        """Show the node's current display (``display`` where the caller has it); its backdrops are
        refitted now, or added to ``refit`` when many nodes change at once (a backdrop is refitted
        once, not once per member)."""
        item = self.node_items.get(node_id)
        if item is None:
            return
        if display is None:
            display = node_display(self.graph, node_id, report, node_id in self._region_nodes)
        ports = (item.display.inputs, item.display.outputs)
        if item.set_display(display):
            if ports != (display.inputs, display.outputs):  # (a count's line only changes the height)
                for wire in self._wires_by_node.get(node_id, ()):
                    self._update_wire(wire)
            regions = self._regions_by_node.get(node_id, ())
            if refit is not None:
                refit.update(regions)
            else:
                for region in regions:
                    self._fit_region(region)

    def cache_wires(self, far: bool) -> None:
        """Paint the wires from pixmaps (``far``: every view is zoomed out past FAR_WIRES) or directly."""
        if far != self.wires_cached:
            self.wires_cached = far
            for wire in self.wire_items.values():
                wire.set_cached(far)

    def hold_labels(self, shown: bool) -> None:
        """Wires' bounds hold their labels (``shown``: a view draws labels at its zoom) or not."""
        if shown != self.labels_held:
            self.labels_held = shown
            for wire in self.wire_items.values():
                wire.hold_label(shown)

    def item_moved(self, item: NodeItem) -> None:
        """A node item moved (drag or sync): update only its own wires and regions."""
        self.items_moved([item])

    def items_moved(self, items: list[NodeItem]) -> None:
        """Several nodes moved together: each affected wire is recomputed once."""
        wires: set[WireItem] = set()
        bands = [(region, region.label_band()) for region in self.region_items]
        for item in items:
            wires.update(self._wires_by_node.get(item.node_id, ()))
            rect = item.sceneBoundingRect()
            for region in self._regions_by_node.get(item.node_id, ()):
                region.include(rect)  # refitting a 500-node region per mouse move is too slow
                self._grown.add(region)
            self._make_room(rect)
            for region, band in bands:  # (its label ends before a node standing in its band)
                if item.node_id in region.blockers or band.intersects(rect):
                    region.update()
        for wire in wires:
            self._update_wire(wire)

    def _make_room(self, rect: QRectF) -> None:
        """Grow the scene rect (with a wide margin) so the canvas pans past every node.

        A bounded rect keeps the BSP index effective; an 'infinite' one would put
        every item in one leaf and make hit tests linear.
        """
        current = self.sceneRect() if self._room_set else QRectF()
        if current.contains(rect):
            return
        margin = max(ROOM, rect.width(), rect.height())
        self.setSceneRect(current.united(rect.adjusted(-margin, -margin, margin, margin)))
        self._room_set = True

    # ---- derived analysis ------------------------------------------------
    def apply_analysis(self, refresh_nodes: bool = True) -> None:
        """Shapes on wires, error outlines/tooltips, counts and region backdrops."""
        report = self.report()
        refit = set(self._apply_regions(report))
        errors: dict[str, list[str]] = {}
        warnings: dict[str, list[str]] = {}
        bad_ports: dict[str, set[str]] = {}
        for d in getattr(report, "diagnostics", None) or ():
            if d.node is None:
                continue
            text = f"{d.port}: {d.message}" if d.port else d.message
            for node_id in getattr(d, "nodes", None) or (d.node,):  # one warning may concern many
                (errors if d.severity == "error" else warnings).setdefault(node_id, []).append(text)
            if d.severity == "error" and d.port:
                bad_ports.setdefault(d.node, set()).add(d.port)
        for node_id, item in self.node_items.items():
            change = self._card_change(item, report)
            if change is not None and refresh_nodes:  # (else: just built from it)
                info = getattr(report, "nodes", {}).get(node_id) if report is not None else None
                self._refresh_node(node_id, report, refit, None if change == "all" else
                                   with_count(item.display, getattr(info, "parameters", None)))
            item.set_diagnostics(tuple(errors.get(node_id, ())), tuple(warnings.get(node_id, ())),
                                 frozenset(bad_ports.get(node_id, ())))
        shown = self.labels_held
        labels = WireLabels(report)
        for edge, wire in self.wire_items.items():
            wire.set_label(labels.of(edge.src), edge.dst.port in bad_ports.get(edge.dst.node, ()), shown=shown)
        for region in refit:
            self._fit_region(region)

    def _card_change(self, item: NodeItem, report: Any) -> str | None:
        """What a re-check may change on the node's card: None, nothing (its type, params and
        parameter count are those it was drawn from: an edit re-infers a few nodes of 1,000);
        "count", its parameter count alone; "all" (its type or params, or a Group/Repeat card or
        one of an unknown type, always drawn anew: their ports and memory line follow other facts).
        A node's region is not read here: only a Repeat's card says it (flat or linear memory)."""
        node = self.graph.nodes.get(item.node_id)
        spec = registry.find(node.type) if node is not None and isinstance(node.type, str) else None
        if node is None or spec is None or runs_groups(spec):
            return "all"
        info = getattr(report, "nodes", {}).get(item.node_id) if report is not None else None
        drawn, count = (node.type, repr(node.params)), getattr(info, "parameters", None)
        before, item.shown_for = item.shown_for, (drawn, count)
        if before is None or before[0] != drawn:
            return "all"
        return None if before[1] == count else "count"

    def shape_of(self, port: PortRef, report: Any = None) -> Any:
        report = report if report is not None else self.report()
        if report is None:
            return None
        try:
            return report.shape(port)
        except Exception:  # an older/partial report: no shape rather than a crash
            return None

    def memory_tooltip(self, node_id: str) -> str:
        """The node's memory per mode and how its bytes are attributed (tooltip HTML)."""
        if self.graph is not self.document.graph:  # a group body has no per-node estimate
            return ""
        return hover.memory_text(self.document.current_report(), node_id)  # (walked, if an edit's peaks are pending)

    def port_tooltip(self, node_id: str, port: str, is_output: bool) -> str:
        """What flows through a port: its shape, and where it comes from or goes to."""
        return hover.port_text(self.graph, self.shape_of, node_id, port, is_output)

    # ---- edits -------------------------------------------------------------
    def push(self, cmd: Command) -> None:
        self.document.push(cmd)

    def connect_ports(self, src: PortRef, dst: PortRef, replace: bool = False, moving: Edge | None = None,
                      pos: QPointF | None = None) -> bool:
        """Connect if allowed (one undoable step); otherwise show why and return False."""
        reason = connection_reason(self.graph, src, dst, replace=replace, moving=moving)
        if reason is not None:
            self.show_hint(f"Cannot connect: {reason}", pos, ok=False)
            return False
        children: list[Command] = []
        if moving is not None:
            children.append(Disconnect(self.graph, moving))
        if replace:
            cmd: Command = connect_replacing(self.graph, src, dst)
        else:
            cmd = Connect(self.graph, src, dst)
        if children:
            self.push(Macro(f"Reconnect {moving} to {dst}", [*children, cmd]))
        else:
            self.push(cmd)
        self.message.emit(f"Connected {src} → {dst}")
        return True

    def commit_moves(self, splice: Edge | None = None) -> bool:
        """Push one Move for every node whose item was dragged away from its graph position; a
        lone unwired node dropped on the wire ``splice`` goes into it in the same step."""
        moves = {}
        for node_id, item in self.node_items.items():
            node = self.graph.nodes.get(node_id)
            pos = (item.pos().x(), item.pos().y())
            if node is not None and node.pos != pos:
                # whole pixels: the file gets 472, not 472.31999999999994 from the mouse
                moves[node_id] = (float(round(pos[0])), float(round(pos[1])))
        if moves and splice is not None and len(moves) == 1 and splice in self.graph.edges:
            node_id = next(iter(moves))
            refusal = self._splice_refusal(node_id, splice)
            if refusal is None:
                ins, outs = self.graph.ports(node_id)
                self.push(Macro(f"Insert {node_id} into {splice}", [
                    Move(self.graph, moves), *splice_into(self.graph, node_id, splice, ins[0], outs[0])]))
                self.message.emit(f"Inserted {node_id} between {splice.src} and {splice.dst}")
                return True
            self.message.emit(f"Moved {node_id}, not into the wire: {refusal}")
        if moves:
            self.push(Move(self.graph, moves))
        # the drag only grew the backdrops it crossed: fit them to their members now (a re-check
        # refits only a region whose members or their cards changed)
        grown, self._grown = self._grown, set()
        for region in grown:
            if region.scene() is self:
                self._fit_region(region)
        return bool(moves)

    def can_splice(self, node_id: str) -> bool:
        """A node with no wires and an input and an output may be dragged into a wire."""
        if node_id not in self.graph.nodes or self.graph.edges_of(node_id):
            return False
        try:
            ins, outs = self.graph.ports(node_id)
        except Exception:  # ports that depend on a group not chosen yet
            return False
        return bool(ins and outs)

    def _splice_refusal(self, node_id: str, edge: Edge) -> str | None:
        from .quick_add import wire_refusal

        node = self.graph.nodes[node_id]
        spec = registry.find(node.type)
        if spec is None:
            return None
        return wire_refusal(node_id, spec, self.shape_of(edge.src), edge.src, self.graph.groups, node.params)

    # ---- hints -------------------------------------------------------------
    def show_hint(self, text: str, pos: QPointF | None, ok: bool, announce: bool = True) -> None:
        """A label near the cursor; refusals also go to the status bar via ``message``."""
        if pos is not None:
            self.hint.show_text(text, self.theme.ok_text if ok else self.theme.refuse_text, pos)
            self._hint_timer.start(HINT_MS)
        if announce:
            self.message.emit(text)

    def hide_hint(self) -> None:
        self.hint.hide()

    def nodes_rect(self, node_ids: list[str] | None = None) -> QRectF:
        self.flush_moves()
        items = [self.node_items[n] for n in (node_ids if node_ids is not None else self.node_items)
                 if n in self.node_items]
        rect = QRectF()
        for item in items:
            rect = rect.united(item.sceneBoundingRect())
        for region in self.region_items:
            if node_ids is None:
                rect = rect.united(region.mapRectToScene(region.fit_rect()))
        return rect

    def set_theme(self, dark: bool) -> None:
        self.theme = theme_for(dark)
        self.setBackgroundBrush(self.theme.background)
        for item in self.items():
            item.update()
