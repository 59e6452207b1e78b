"""Grouping: collapse a selection into a ``Group`` node, and inline a group again.

``group_nodes`` moves the selected nodes (and the edges among them) into a new
body in ``graph.groups``, with one ``GroupInput`` per distinct outside source
feeding the selection and one ``GroupOutput`` per selected output read
outside; a ``Group`` node takes their place, wired to the same outside ports.
``ungroup`` is the inverse. Both return one compound command built from the
primitive commands, so each is a single, exactly undoable step.

Port names follow docs/architecture.md: a Group node's inputs are its body's
GroupInput ``port`` params in node order (``in`` for one, ``in0, in1, ...``
for several), its outputs likewise from the GroupOutputs (``out``/``out0..``).
"""
from __future__ import annotations

from collections.abc import Iterable

from .commands import AddNode, Command, Macro, SetGroup, fresh_id, remove_nodes
from .graph import Edge, Graph, GraphError, Node, PortRef, valid_id

GROUP = "Group"
GROUP_INPUT = "GroupInput"
GROUP_OUTPUT = "GroupOutput"
_CARD = 164.0  # a node card's width on the canvas (positions are top-left corners)
_GAP = 120.0   # free space between GroupInput/GroupOutput and the body: its wires stay visible


class GroupCommand(Macro):
    """The compound edit of ``group_nodes``; names what it created."""

    def __init__(self, text: str, children: list[Command], node_id: str, group_name: str) -> None:
        super().__init__(text, children)
        self.node_id = node_id        # the new Group node
        self.group_name = group_name  # its body in graph.groups


class _AddEdge(Command):
    """Append an edge made by grouping (no duplicate check: the edges are computed)."""

    def __init__(self, graph: Graph, edge: Edge) -> None:
        self.graph, self.edge = graph, edge
        self.text = f"Connect {edge.src} to {edge.dst}"

    def do(self) -> None:
        self.graph.add_edge(self.edge)

    def undo(self) -> None:
        self.graph.remove_edge(self.edge)


def type_of(node: Node) -> str:
    """The node's current type id (legacy ids resolved; unknown types as written)."""
    from .spec import registry

    spec = registry.find(node.type)
    return spec.type_id if spec is not None else node.type


def port_names(prefix: str, count: int) -> list[str]:
    """``["in"]`` for one port, ``["in0", "in1", ...]`` for several."""
    return [prefix] if count == 1 else [f"{prefix}{i}" for i in range(count)]


def _centre(nodes: Iterable[Node]) -> tuple[float, float]:
    pts = [n.pos for n in nodes]
    if not pts:
        return (0.0, 0.0)
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    return ((min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2)


def _column(count: int, x: float, cy: float) -> list[tuple[float, float]]:
    return [(x, cy + (k - (count - 1) / 2) * 110.0) for k in range(count)]


def _check_no_cycle(graph: Graph, chosen: set[str]) -> None:
    """Refuse a selection that an outside path leaves and re-enters (the group would feed itself)."""
    succ: dict[str, list[str]] = {}
    for e in graph.edges:
        succ.setdefault(e.src.node, []).append(e.dst.node)
    stack = list(dict.fromkeys(
        e.dst.node for e in graph.edges if e.src.node in chosen and e.dst.node not in chosen
    ))
    seen = set(stack)
    while stack:
        v = stack.pop()
        for w in succ.get(v, ()):
            if w in chosen:
                raise GraphError(
                    f"grouping these nodes would make a cycle: {v!r} reads from the selection and feeds it "
                    f"again; add {v!r} to the selection or group fewer nodes"
                )
            if w not in seen:
                seen.add(w)
                stack.append(w)


def group_nodes(
    graph: Graph, node_ids: Iterable[str], name: str | None = None, group_name: str | None = None,
    project: Graph | None = None,
) -> GroupCommand:
    """Collapse ``node_ids`` into a ``Group`` node ``name`` whose body is ``groups[group_name]``.

    ``graph`` may be a group body (its nodes are grouped into a nested group); the new
    body is then added to ``project`` (the document's graph, whose ``groups`` the bodies
    share), so the project's observers see it like any other group.
    """
    home = project if project is not None else graph
    chosen = set(node_ids)
    if not chosen:
        raise GraphError("select at least one node to group")
    for nid in chosen:
        node = graph.node(nid)
        if type_of(node) in (GROUP_INPUT, GROUP_OUTPUT):
            raise GraphError(f"{nid!r} is a {type_of(node)} node; it belongs to its group and cannot be grouped")
    order = [nid for nid in graph.nodes if nid in chosen]
    _check_no_cycle(graph, chosen)

    group_name = group_name if group_name is not None else graph.unique_group_name("group")
    if not valid_id(group_name):
        raise GraphError(f"group name {group_name!r} is not allowed: use 1-64 characters without spaces or dots")
    if group_name in graph.groups:
        raise GraphError(f"there is already a group {group_name!r}; pick another name")
    # the Group node takes its body's name ("group1" uses group1) unless that id is taken
    node_id = name if name is not None else group_name if group_name not in graph.nodes else graph.unique_id(group_name)
    if not valid_id(node_id):
        raise GraphError(f"node id {node_id!r} is not allowed: use 1-64 characters without spaces or dots")
    if node_id in graph.nodes and node_id not in chosen:
        raise GraphError(f"a node with id {node_id!r} already exists")

    incoming = [e for e in graph.edges if e.dst.node in chosen and e.src.node not in chosen]
    outgoing = [e for e in graph.edges if e.src.node in chosen and e.dst.node not in chosen]
    sources = list(dict.fromkeys(e.src for e in incoming))  # outside ports, by first use
    results = list(dict.fromkeys(e.src for e in outgoing))  # selected ports read outside
    in_port = dict(zip(sources, port_names("in", len(sources))))
    out_port = dict(zip(results, port_names("out", len(results))))

    # The body: GroupInputs, the selected nodes (same ids, same positions), GroupOutputs.
    members = [graph.nodes[nid] for nid in order]
    cx, cy = _centre(members)
    left = min(n.pos[0] for n in members) - _CARD - _GAP
    right = max(n.pos[0] for n in members) + _CARD + _GAP
    body = Graph(group_name)
    taken: set[str] = set(order)
    gi: dict[PortRef, str] = {}
    for src, pos in zip(sources, _column(len(sources), left, cy)):
        gi[src] = fresh_id("input", taken)
        taken.add(gi[src])
        body.nodes[gi[src]] = Node(gi[src], GROUP_INPUT, {"port": in_port[src]}, pos)
    for node in members:
        body.nodes[node.id] = node.copy()
    go: dict[PortRef, str] = {}
    for src, pos in zip(results, _column(len(results), right, cy)):
        go[src] = fresh_id("output", taken)
        taken.add(go[src])
        body.nodes[go[src]] = Node(go[src], GROUP_OUTPUT, {"port": out_port[src]}, pos)

    # Body and outside edges, both in the order of the edges they replace.
    outer: list[Edge] = []
    fed: set[Edge] = set()
    for e in graph.edges:
        inside_src, inside_dst = e.src.node in chosen, e.dst.node in chosen
        if inside_src and inside_dst:
            body.edges.append(e)
        elif inside_dst:
            body.edges.append(Edge(PortRef(gi[e.src], "out"), e.dst))
            outer.append(Edge(e.src, PortRef(node_id, in_port[e.src])))
        elif inside_src:
            feed = Edge(e.src, PortRef(go[e.src], "in"))
            if feed not in fed:
                fed.add(feed)
                body.edges.append(feed)
            outer.append(Edge(PortRef(node_id, out_port[e.src]), e.dst))
    outer = list(dict.fromkeys(outer))

    group_node = Node(node_id, GROUP, {"group": group_name}, (cx, cy))
    children: list[Command] = list(remove_nodes(graph, order).children)
    children += [SetGroup(home, group_name, body), AddNode(graph, group_node)]
    children += [_AddEdge(graph, e) for e in outer]
    text = f"Group {order[0]}" if len(order) == 1 else f"Group {len(order)} nodes"
    return GroupCommand(text, children, node_id, group_name)


def _refers_to(node: Node, group_name: str) -> bool:
    from .spec import registry

    spec = registry.find(node.type)
    if spec is None:  # unknown type: any param naming the group counts, to be safe
        return any(v == group_name for v in node.params.values())
    return any(
        p.kind == "group" and node.params.get(pname, p.default) == group_name for pname, p in spec.params.items()
    )


def group_users(graph: Graph, group_name: str, exclude: Iterable[str] = ()) -> list[str]:
    """Ids of nodes (in ``graph`` and in every body, as ``body/id``) that refer to ``group_name``;
    ``exclude`` uses the same spelling."""
    skip = set(exclude)
    users = [n.id for n in graph.nodes.values() if n.id not in skip and _refers_to(n, group_name)]
    for bname, body in graph.groups.items():
        if body is not graph:
            users += [f"{bname}/{n.id}" for n in body.nodes.values()
                      if f"{bname}/{n.id}" not in skip and _refers_to(n, group_name)]
    return users


def ungroup(graph: Graph, group_node_id: str, project: Graph | None = None) -> Macro:
    """Inline a ``Group`` node's body in its place (ids made unique, positions around the node).

    The body is removed from ``graph.groups`` when nothing else uses it. Inside a
    body, pass the document's graph as ``project``: the project's other users are
    only visible from there (without it, the body is kept).
    """
    node = graph.node(group_node_id)
    if type_of(node) != GROUP:
        raise GraphError(f"{group_node_id!r} is a {type_of(node)} node, not a Group; there is nothing to ungroup")
    gname = node.params.get("group")
    if not isinstance(gname, str) or gname not in graph.groups:
        raise GraphError(f"group node {group_node_id!r} refers to no existing group ({gname!r}); set its group first")
    body = graph.groups[gname]

    kinds = {nid: type_of(n) for nid, n in body.nodes.items()}
    inner = [n for nid, n in body.nodes.items() if kinds[nid] not in (GROUP_INPUT, GROUP_OUTPUT)]
    in_port = {nid: n.params.get("port", "in") for nid, n in body.nodes.items() if kinds[nid] == GROUP_INPUT}
    out_port = {nid: n.params.get("port", "out") for nid, n in body.nodes.items() if kinds[nid] == GROUP_OUTPUT}
    feeds: dict[str, list[PortRef]] = {}
    reads: dict[str, list[PortRef]] = {}
    for e in graph.edges:
        if e.src.node == e.dst.node:
            continue  # a Group node feeding itself: the loop goes away with the node
        if e.dst.node == group_node_id:
            feeds.setdefault(e.dst.port, []).append(e.src)
        if e.src.node == group_node_id:
            reads.setdefault(e.src.port, []).append(e.dst)

    taken = set(graph.nodes) - {group_node_id}
    mapping: dict[str, str] = {}
    for n in inner:
        mapping[n.id] = fresh_id(n.id, taken)
        taken.add(mapping[n.id])
    cx, cy = _centre(inner)
    dx, dy = node.pos[0] - cx, node.pos[1] - cy

    children: list[Command] = list(remove_nodes(graph, [group_node_id]).children)
    for n in inner:
        copy = n.copy()
        copy.id, copy.pos = mapping[n.id], (n.pos[0] + dx, n.pos[1] + dy)
        children.append(AddNode(graph, copy))
    existing = set(graph.edges)  # a pass-through GroupInput -> GroupOutput may repeat one
    edges: dict[Edge, None] = {}
    for e in body.edges:
        if e.src.node not in body.nodes or e.dst.node not in body.nodes:
            continue
        if e.src.node in in_port:
            srcs = feeds.get(in_port[e.src.node], [])
        elif e.src.node in mapping:
            srcs = [PortRef(mapping[e.src.node], e.src.port)]
        else:
            srcs = []
        if e.dst.node in out_port:
            dsts = reads.get(out_port[e.dst.node], [])
        elif e.dst.node in mapping:
            dsts = [PortRef(mapping[e.dst.node], e.dst.port)]
        else:
            dsts = []
        for s in srcs:
            for d in dsts:
                if Edge(s, d) not in existing:
                    edges[Edge(s, d)] = None
    children += [_AddEdge(graph, e) for e in edges]
    if project is not None and project is not graph:  # ungrouping inside a body of ``project``
        where = next((k for k, b in project.groups.items() if b is graph), None)
        if where is not None and not group_users(project, gname, exclude=[f"{where}/{group_node_id}"]):
            children.append(SetGroup(project, gname, None))
    elif not graph.is_body() and not group_users(graph, gname, exclude=[group_node_id]):
        children.append(SetGroup(graph, gname, None))
    return Macro(f"Ungroup {group_node_id}", children)


__all__ = ["GROUP", "GROUP_INPUT", "GROUP_OUTPUT", "GroupCommand", "group_nodes", "group_users", "port_names",
           "type_of", "ungroup"]
