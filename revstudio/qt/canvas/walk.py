"""Alt+arrows walk the graph along its wires, from the keyboard (as Netron's and Blender's users expect).

Alt+Right selects the node the selection's outputs feed (the topmost, where they feed
several), Alt+Left the node feeding its first wired input, and Alt+Down / Alt+Up the next
/ previous node fed by the node it was reached from (its siblings, top to bottom; without
one, by what feeds its first wired input; the sources, Inputs first, for a node with no
wired input). With nothing selected, Alt+Right starts at the first Input. Qt-free: the
view passes the graph (and where the walk came from) and gets an id back.
"""
from __future__ import annotations

from revstudio.core.graph import Graph

DIRECTIONS = ("left", "right", "up", "down")


def _by_place(graph: Graph, ids: set[str]) -> list[str]:
    """``ids`` top to bottom, then left to right (a column's order on the canvas)."""
    return sorted(ids, key=lambda n: (graph.node(n).pos[1], graph.node(n).pos[0], n))


def _feeder(graph: Graph, node_id: str) -> str | None:
    """The node feeding ``node_id``'s first wired input (in the type's port order)."""
    edges = graph.edges_into(node_id)
    if not edges:
        return None
    order = {p: i for i, p in enumerate(graph.ports(node_id)[0])}
    return min(edges, key=lambda e: (order.get(e.dst.port, len(order)), e.dst.port)).src.node


def _sources(graph: Graph) -> list[str]:
    """Nodes without a wired input, Inputs (a body's GroupInputs) first."""
    free = [n.id for n in graph if not graph.edges_into(n.id)]
    inputs = [n for n in free if graph.node(n).type in ("Input", "GroupInput")]  # (a group tab starts at its GroupInputs)
    return _by_place(graph, set(inputs)) + _by_place(graph, set(free) - set(inputs))


def parent_of(graph: Graph, current: str, came_from: str | None = None) -> str | None:
    """The node whose consumers are ``current``'s siblings: the one the walk came from, where it
    still feeds ``current``, else the feeder of its first wired input."""
    if came_from is not None and any(e.src.node == came_from for e in graph.edges_into(current)):
        return came_from
    return _feeder(graph, current)


def step(graph: Graph, current: str | None, direction: str, came_from: str | None = None) -> str | None:
    """The node one step from ``current`` in ``direction`` (None where there is none); ``came_from``:
    the node an earlier Alt+Right stepped from, whose consumers Alt+Up / Alt+Down go through."""
    if current is None or current not in graph:
        starts = _sources(graph)
        return starts[0] if starts and direction == "right" else None
    if direction == "right":
        fed = _by_place(graph, {e.dst.node for e in graph.edges_from(current)})
        return fed[0] if fed else None
    if direction == "left":
        return _feeder(graph, current)
    parent = parent_of(graph, current, came_from)
    row = (_by_place(graph, {e.dst.node for e in graph.edges_from(parent)}) if parent is not None
           else _sources(graph))
    i = row.index(current) + (1 if direction == "down" else -1) if current in row else -1
    return row[i] if 0 <= i < len(row) else None


def nowhere(graph: Graph, current: str | None, direction: str, came_from: str | None = None) -> str:
    """What the status bar says when ``step`` found no node."""
    if current is None:
        return "Alt+Right selects the first Input: this canvas has no node to start from"
    if direction == "right":
        return f"{current} feeds no node (Alt+Left goes back to what feeds it)"
    if direction == "left":
        return f"Nothing feeds {current} (Alt+Right goes on to what it feeds)"
    parent = parent_of(graph, current, came_from)
    where = f"fed by {parent}" if parent else "without a wired input"
    return f"{current} is the {'last' if direction == 'down' else 'first'} node {where}"
