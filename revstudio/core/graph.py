"""The document's facts: nodes, edges and groups, with primitive mutators.

A :class:`Graph` is a thin store. Each mutator changes one fact and emits an
event (``node_added``, ``edge_removed``, ...) followed by ``changed``; views and
derived passes (shapes, regions) observe those events. Queries such as
``check_connect`` never mutate. Undoable edits live in ``commands``.

Group bodies are graphs too. Group names form one namespace per project, so a
body shares its project's ``groups`` dict (``set_group`` wires that up): a
``Group`` node inside a body finds its own body, and ``graph.ports`` works at
every level. Node and edge order are facts as well: they are saved, and undo
restores them exactly. ``edges`` is a list that indexes itself (``EdgeList``),
so duplicate checks and per-node edge queries do not scan every edge.
"""
from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .edge_index import EdgeList
from .events import Event
from .graph_groups import GroupStore
from .graph_parts import ID_PATTERN, Edge, GraphError, Node, PortRef, copy_value, reachable, valid_id
from .scripting import plain_value

__all__ = ["ID_PATTERN", "Edge", "Graph", "GraphError", "Node", "PortRef", "reachable", "valid_id"]


class Graph(GroupStore):
    """Nodes, edges and named sub-graphs (groups) of a project::

        g = rs.Graph("tiny")
        g.add_node("Input", "x", {"shape": [8, 16, 16]})    # shapes without the batch axis
        g.add_node("Conv", "f", {"out_channels": 8, "kernel_size": 3, "padding": "same"})
        g.add_node("Output", "y")
        g.connect("x.out", "f.in"); g.connect("f.out", "y.in")   # "<node id>.<port>"

    The mutators store facts without judging them (an unknown type, param or port is the
    check's diagnostic, as in the editor); ``rs.check`` reports, ``rs.compile`` refuses.
    """

    def __init__(self, name: str = "untitled", groups: dict[str, Graph] | None = None) -> None:
        self.name = name
        self.nodes: dict[str, Node] = {}
        self.edges = []  # an EdgeList, see the property
        # A body passes its project's dict here (or gets it from ``set_group``).
        self.groups: dict[str, Graph] = groups if groups is not None else {}
        self.training: dict[str, Any] = {}
        self.view: dict[str, Any] = {}
        # old node id -> its current id, after renames: checkpoints saved under the
        # old name still load (the compiler and the exported code read it). A group
        # body keeps its own map, for the layers inside it.
        self.renamed: dict[str, str] = {}
        # What the file says provides each plugin node type ({"distribution", "version"}),
        # kept so a project whose plugin is not installed names it and saves back unchanged.
        self.plugins: dict[str, dict[str, str]] = {}
        # The revstudio that wrote the file it was loaded from (a Save writes this one's): the check
        # says so where a newer one's node types or parameters are unknown here.
        self.made_by = ""
        # The file it was read from (``load`` sets it; None for a graph built in code): its folder is
        # where the relative data paths of ``training`` start, and ``save`` into another folder
        # re-expresses them from there (``core.data_paths``).
        self.source: str | None = None
        self.node_added = Event("node_added")        # (node)
        self.node_removed = Event("node_removed")    # (node)
        self.edge_added = Event("edge_added")        # (edge)
        self.edge_removed = Event("edge_removed")    # (edge)
        self.param_changed = Event("param_changed")  # (node, name, old, new)
        self.node_moved = Event("node_moved")        # (node, old_pos, new_pos)
        self.node_renamed = Event("node_renamed")    # (old_id, new_id), after its remove/add events
        self.group_changed = Event("group_changed")  # (name, old_graph|None, new_graph|None)
        self.group_renamed = Event("group_renamed")  # (old_name, new_name), before its group_changed pair
        self.training_changed = Event("training_changed")  # (old_dict, new_dict)
        self.changed = Event("changed")              # () after any of the above

    def __repr__(self) -> str:
        n, e, k = len(self.nodes), len(self.edges), len(self.groups)
        return (f"<Graph {self.name!r}: {n:,} node{'s' * (n != 1)}, {e:,} edge{'s' * (e != 1)}, "
                f"{k} group{'s' * (k != 1)}>")

    @property
    def edges(self) -> EdgeList:
        """The edges in file order: a ``list`` whose index follows every change."""
        return self._edges

    @edges.setter
    def edges(self, edges: Iterable[Edge]) -> None:
        # Code that assigns a plain list (copies, clipboard, tests) gets an indexed one.
        self._edges = edges if isinstance(edges, EdgeList) else EdgeList(edges)

    # ---- queries -------------------------------------------------------
    def node(self, node_id: str) -> Node:
        """The node ``node_id``; a :class:`GraphError` naming it when there is none."""
        try:
            return self.nodes[node_id]
        except KeyError:
            raise GraphError(f"there is no node {node_id!r}") from None

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.nodes

    def __iter__(self) -> Iterator[Node]:
        return iter(list(self.nodes.values()))

    def __len__(self) -> int:
        return len(self.nodes)

    def edges_of(self, node_id: str) -> list[Edge]:
        """The edges into and out of ``node_id`` (an :class:`Edge` has ``src`` and ``dst`` PortRefs)."""
        return list(self.edges.touching(node_id))

    def edges_into(self, node_id: str, port: str | None = None) -> list[Edge]:
        """The edges into ``node_id`` (into its input ``port`` only, when given)."""
        return [e for e in self.edges.touching(node_id)
                if e.dst.node == node_id and (port is None or e.dst.port == port)]

    def edges_from(self, node_id: str, port: str | None = None) -> list[Edge]:
        """The edges out of ``node_id`` (out of its output ``port`` only, when given)."""
        return [e for e in self.edges.touching(node_id)
                if e.src.node == node_id and (port is None or e.src.port == port)]

    def unique_id(self, prefix: str) -> str:
        """A node id not in use: ``prefix`` made an id ("conv"), else with the first free number ("conv2")."""
        base = re.sub(r"[\s.]+", "_", prefix.lower()) or "node"
        if base not in self.nodes:
            return base
        return next(f"{base}{i}" for i in itertools.count(1) if f"{base}{i}" not in self.nodes)

    def unique_group_name(self, prefix: str = "group") -> str:
        """A group name not in use: ``prefix`` with the first free number ("group1")."""
        return next(f"{prefix}{i}" for i in itertools.count(1) if f"{prefix}{i}" not in self.groups)

    def ports(self, node_id: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(input ports, output ports) of a node, from its spec.

        A node whose type is unknown (its plugin is not installed) has the ports its
        wires use, in wire order, so it is drawn with those wires still attached.
        """
        from .spec import registry

        node = self.node(node_id)
        spec = registry.find(node.type)
        if spec is None:
            ins = dict.fromkeys(e.dst.port for e in self.edges_into(node_id))
            outs = dict.fromkeys(e.src.port for e in self.edges_from(node_id))
            return tuple(ins), tuple(outs)
        params = {**spec.defaults(), **node.params}
        try:
            return spec.input_ports(params, self.groups), spec.output_ports(params, self.groups)
        except Exception:  # a bad param value: ports fall back to none; validation reports it
            return (), ()

    def check_connect(self, src: PortRef, dst: PortRef) -> str | None:
        """Why ``src -> dst`` cannot be connected, or None if it can."""
        if src.node not in self.nodes:
            return f"there is no node {src.node!r}"
        if dst.node not in self.nodes:
            return f"there is no node {dst.node!r}"
        if src.node == dst.node:
            return "a node cannot feed itself"
        if src.port not in self.ports(src.node)[1]:
            return f"{src.node} has no output port {src.port!r}"
        if dst.port not in self.ports(dst.node)[0]:
            return f"{dst.node} has no input port {dst.port!r}"
        if Edge(src, dst) in self.edges:
            return f"{src} is already connected to {dst}"
        if self._reaches(dst.node, src.node):
            return f"connecting {src} to {dst} would make a cycle"
        return None

    def _reaches(self, start: str, goal: str) -> bool:
        # Walks only what ``start`` reaches, through the edge index.
        stack, seen = [start], {start}
        while stack:
            n = stack.pop()
            if n == goal:
                return True
            for e in self.edges.touching(n):
                m = e.dst.node
                if e.src.node == n and m not in seen:
                    seen.add(m)
                    stack.append(m)
        return False

    # ---- primitive mutators -------------------------------------------
    def add_node(
        self,
        type: str,
        id: str | None = None,
        params: dict[str, Any] | None = None,
        pos: Iterable[float] = (0.0, 0.0),
    ) -> Node:
        """Add a node of ``type`` (a catalog type id: "Conv", "Split", ...) with ``params`` (the
        spec's defaults fill the rest), under ``id`` (None: a new one from the type). Returns it."""
        node_id = id if id is not None else self.unique_id(type)
        if not valid_id(node_id):
            raise GraphError(
                f"node id {node_id!r} is not allowed: use 1-64 characters without spaces or dots"
            )
        if node_id in self.nodes:
            raise GraphError(f"a node with id {node_id!r} already exists")
        if params is not None and not isinstance(params, Mapping):
            raise GraphError(f"node {node_id!r}: params must be a dict of name -> value, got "
                             f"{params.__class__.__name__}; e.g. {{'out_channels': 8}}")
        try:
            x, y = (float(v) for v in pos)
        except (TypeError, ValueError):
            raise GraphError(f"node {node_id!r}: pos must be two numbers (x, y), got {pos!r}") from None
        node = Node(node_id, type, {k: plain_value(v) for k, v in (params or {}).items()}, (x, y))
        self.insert_node(node)
        return node

    def insert_node(self, node: Node, index: int | None = None) -> None:
        """Add ``node`` at the end of the node order, or at ``index`` (undo restores order)."""
        if node.id in self.nodes:
            raise GraphError(f"a node with id {node.id!r} already exists")
        if index is None or index >= len(self.nodes):
            self.nodes[node.id] = node
        else:
            items = list(self.nodes.items())
            items.insert(max(index, 0), (node.id, node))
            self.nodes.clear()  # keep the dict object: views may hold it
            self.nodes.update(items)
        self.node_added.emit(node)
        self.changed.emit()

    def remove_node(self, node_id: str) -> Node:
        """Remove the node and every wire to or from it; returns the node."""
        node = self.node(node_id)
        for edge in self.edges_of(node_id):
            self.remove_edge(edge)
        del self.nodes[node_id]
        self.node_removed.emit(node)
        self.changed.emit()
        return node

    def rename_node(self, old: str, new: str) -> None:
        """Give node ``old`` the id ``new``, keeping its place in the order and its wires.

        Observers see the wires and the node go and come back under the new id.
        """
        if new == old:
            return
        if not valid_id(new):
            raise GraphError(f"{new!r} is not a valid node id: use 1-64 characters without spaces, dots "
                             "or control characters")
        if new in self.nodes:
            raise GraphError(f"a node with id {new!r} already exists")
        node = self.node(old)
        index = list(self.nodes).index(old)
        wired = [(i, e) for i, e in enumerate(self.edges) if old in (e.src.node, e.dst.node)]
        for _, e in reversed(wired):
            self.remove_edge(e)
        del self.nodes[old]
        self.node_removed.emit(node)
        renamed = node.copy()
        renamed.id = new
        self.insert_node(renamed, index)

        def swap(ref: PortRef) -> PortRef:
            return PortRef(new, ref.port) if ref.node == old else ref

        for i, e in wired:
            self.add_edge(Edge(swap(e.src), swap(e.dst)), i)
        self.node_renamed.emit(old, new)

    def connect(self, src: str | PortRef, dst: str | PortRef) -> Edge:
        """Wire output port ``src`` to input port ``dst``, each ``"<node id>.<port>"`` (``"s.out0"``,
        ``"m.in1"``; single ports are ``in``/``out``). Both nodes must exist; whether the ports do
        and the shapes fit is the check's to say (``graph.check_connect`` asks beforehand)."""
        s = src if isinstance(src, PortRef) else PortRef.parse(src)
        d = dst if isinstance(dst, PortRef) else PortRef.parse(dst)
        for ref in (s, d):
            if ref.node not in self.nodes:
                raise GraphError(f"edge {s} -> {d} names a node {ref.node!r} that does not exist")
        edge = Edge(s, d)
        if edge in self.edges:
            raise GraphError(f"edge {edge} already exists")
        self.add_edge(edge)
        return edge

    def add_edge(self, edge: Edge, index: int | None = None) -> None:
        """Append ``edge`` (or insert it at ``index``); no checks, see ``connect``."""
        if index is None:
            self.edges.append(edge)
        else:
            self.edges.insert(index, edge)
        self.edge_added.emit(edge)
        self.changed.emit()

    def remove_edge(self, edge: Edge) -> None:
        """Remove ``edge`` (one of ``graph.edges``); a :class:`GraphError` when it is not there."""
        try:
            self.edges.remove(edge)
        except ValueError:
            raise GraphError(f"there is no edge {edge}") from None
        self.edge_removed.emit(edge)
        self.changed.emit()

    def set_param(self, node_id: str, name: str, value: Any) -> Any:
        """Set a param; ``None`` resets it to the spec's default. Returns the old raw value.
        NumPy / torch numbers are stored as plain Python ones (``core.scripting``)."""
        node = self.node(node_id)
        old = node.params.get(name)
        value = plain_value(value)
        if value is None:
            node.params.pop(name, None)
        else:
            node.params[name] = value
        self.param_changed.emit(node, name, old, value)
        self.changed.emit()
        return old

    def move(self, node_id: str, pos: Iterable[float]) -> tuple[float, float]:
        """Place ``node_id`` on the canvas at ``pos`` (x, y); returns its old position."""
        node = self.node(node_id)
        old = node.pos
        x, y = pos
        node.pos = (float(x), float(y))
        self.node_moved.emit(node, old, node.pos)
        self.changed.emit()
        return old

    def set_training(self, section: dict[str, Any]) -> dict[str, Any]:
        """Replace the project's ``training`` section (the run settings). Returns the old one.

        The section is stored as given (a deep copy); its keys and values are
        checked by ``revstudio.training.config``, which knows their meaning.
        """
        old = self.training
        self.training = copy_value(dict(section))
        self.training_changed.emit(old, self.training)
        self.changed.emit()
        return old

    def copy(self) -> Graph:
        """A deep copy of the facts (nodes, edges, groups, training, view), without subscribers.

        Copying a project copies its group bodies; copying a body shares the
        project's groups, as the original does.
        """
        import copy as _copy

        if self.is_body():
            out = Graph(self.name, groups=self.groups)
        else:
            out = Graph(self.name)
            for gname, body in self.groups.items():
                b = Graph(body.name, groups=out.groups)
                b.nodes = {k: n.copy() for k, n in body.nodes.items()}
                b.edges = list(body.edges)
                b.training, b.view = _copy.deepcopy(body.training), _copy.deepcopy(body.view)
                b.renamed = dict(body.renamed)
                out.groups[gname] = b
        out.nodes = {k: n.copy() for k, n in self.nodes.items()}
        out.edges = list(self.edges)
        out.training, out.view = _copy.deepcopy(self.training), _copy.deepcopy(self.view)
        out.renamed = dict(self.renamed)
        out.plugins = _copy.deepcopy(self.plugins)
        out.made_by = self.made_by
        out.source = self.source
        for body in out.groups.values():
            if not self.is_body():
                body.plugins = out.plugins
        return out

    def resolved_params(self, node_id: str) -> dict[str, Any]:
        """Params with defaults filled in (unvalidated)."""
        from .spec import registry

        node = self.node(node_id)
        spec = registry.find(node.type)
        return {**(spec.defaults() if spec else {}), **node.params}
