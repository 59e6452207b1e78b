"""Quick add (Shift+A, Tab, a wire dropped on empty canvas): the type search and what it adds.

:class:`QuickAddMixin` is mixed into ``GraphView``: it opens :class:`QuickAddPopup` over the
types (and the Group/Repeat of each group) that fit where the node goes, and turns the choice
into one undoable command: an added node, or an added node wired to the port it came from.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QGraphicsView

from revstudio.core.commands import AddNode, Command, Connect, Macro, connect_replacing
from revstudio.core.graph import Graph, Node, PortRef
from revstudio.core.group_repeat import groups_to_run
from revstudio.core.spec import registry

from .node_item import WIDTH as NODE_WIDTH
from .quick_add import GroupOffer, Offer, QuickAddPopup, accepts_shape, candidate_specs, group_offers, ordered
from .view_parts import ViewParts


class QuickAddMixin(ViewParts):
    """Quick add for a view that has ``document``, ``graph``, ``_scene`` and ``message``."""

    if TYPE_CHECKING:  # provided by GraphView (EditingMixin and the view)
        popup: QuickAddPopup | None

        def cursor_in_view(self) -> QPointF | None: ...
        def select_nodes(self, ids: list[str]) -> None: ...
        def _widget(self) -> QGraphicsView: ...
        def _project(self) -> Graph: ...
        def _new_params(self, type_id: str) -> dict[str, Any]: ...
        def _free_at(self, pos: QPointF, size: tuple[float, float]) -> QPointF: ...
        def placement_near_selection(self, size: tuple[float, float]) -> QPointF: ...
        def add_node_at(self, type_id: str, scene_pos: QPointF | tuple[float, float],
                        params: dict[str, Any] | None = None) -> str | None: ...

    def _quick_add_at_cursor(self) -> None:
        """Shift+A / Tab: at the pointer, or beside the selection where the pointer is off the canvas."""
        self.open_quick_add(self.cursor_in_view())

    def _quick_add_from_wire(self, pos: QPointF, origin: PortRef, is_output: bool) -> None:
        self.open_quick_add(pos, (origin, is_output))

    def open_quick_add(self, scene_pos: QPointF | None, from_port: Any = None) -> QuickAddPopup:
        """Open the type search at ``scene_pos``; with ``from_port`` the new node is wired to it.

        ``from_port`` is ``"node.port"``, a ``PortRef`` or ``(PortRef, is_output)``. With no
        ``scene_pos`` (the keyboard's: the pointer is not on the canvas) the search opens in the
        middle of the view and the node goes into free space right of the selection, as the Nodes
        panel's Enter puts it, so Shift+A after Shift+A builds a row left to right.
        """
        beside = scene_pos is None
        if scene_pos is None:
            view = self._widget()
            scene_pos = view.mapToScene(view.viewport().rect().center())
            if from_port is not None:
                beside = False
        origin: PortRef | None = None
        is_output = True
        if from_port is not None:
            if isinstance(from_port, tuple):
                origin, is_output = from_port
            else:
                origin = from_port if isinstance(from_port, PortRef) else PortRef.parse(from_port)
                is_output = origin.port in self.graph.ports(origin.node)[1]
        in_body = self.graph is not self.document.graph
        specs: Sequence[Offer]
        offers: dict[str, GroupOffer] = {}
        if origin is None:
            # a Group and a Repeat of each group it may run, beside the Group and Repeat types
            groups = group_offers(None, self._project().groups, groups_to_run(self._project(), self._scene.group_name()))
            offers = {offer.key: offer for offer in groups}
            specs, title = ordered([*candidate_specs(None, in_body), *groups]), "Add node"
        else:
            found = candidate_specs("input" if is_output else "output", in_body)
            shape = self._scene.shape_of(origin) if is_output else None
            if shape:
                # offer only what can take this tensor (a Conv cannot follow a flat vector)
                found = [sp for sp in found if accepts_shape(sp, shape, self.graph.groups)]
            # a Group/Repeat of each group that fits (its ports come from the group, none by default)
            groups = group_offers("input" if is_output else "output", self._project().groups,
                                  groups_to_run(self._project(), self._scene.group_name()), shape)
            offers = {offer.key: offer for offer in groups}
            specs = ordered([*found, *groups])
            title = f"Add a node {'after' if is_output else 'before'} {origin}"
        if self.popup is not None:
            self.popup.close()
        view = self._widget()
        self.popup = QuickAddPopup(specs, title, view)
        at = None if beside else scene_pos
        self.popup.chosen.connect(lambda key: self._quick_add_chosen(key, at, origin, is_output, offers))
        self.popup.popup_at(view.mapToGlobal(view.mapFromScene(scene_pos)))
        return self.popup

    def _quick_add_chosen(self, type_id: str, pos: QPointF | None, origin: PortRef | None, is_output: bool,
                          offers: Mapping[str, GroupOffer] | None = None) -> str | None:
        offer = (offers or {}).get(type_id)  # a Group/Repeat of a group: its key names the group
        if pos is None:  # the keyboard's: beside the selection (a wire's list always has a place)
            spot = self.placement_near_selection((NODE_WIDTH, 90.0))
            pos = QPointF(round(spot.x()), round(spot.y()))
        if origin is None:
            at = self._free_at(pos, (NODE_WIDTH, 90.0))
            return self.add_node_at(offer.type_id, at, offer.params) if offer else self.add_node_at(type_id, at)
        type_id, chosen = (offer.type_id, offer.params) if offer is not None else (type_id, self._new_params(type_id))
        spec = registry.get(type_id)
        params = {**spec.defaults(), **chosen}
        ports = spec.input_ports(params, self.graph.groups) if is_output else spec.output_ports(params, self.graph.groups)
        if not ports:
            self.message.emit(f"{type_id} has no {'inputs' if is_output else 'outputs'} to connect to {origin}")
            return None
        x = pos.x() if is_output else pos.x() - NODE_WIDTH
        node = Node(self.graph.unique_id(spec.type_id), spec.type_id, chosen,
                    (float(round(x)), float(round(pos.y() - 40.0))))
        new = PortRef(node.id, ports[0])
        add = AddNode(self.graph, node)
        if is_output:
            link: Command = Connect(self.graph, origin, new)
        elif self.graph.edges_into(origin.node, origin.port):
            link = connect_replacing(self.graph, new, origin)
        else:
            link = Connect(self.graph, new, origin)
        self.document.push(Macro(f"Add {type_id} {node.id} connected to {origin}", [add, link]))
        self.select_nodes([node.id])
        self.message.emit(f"Added {node.id} and connected it to {origin}")
        return node.id
