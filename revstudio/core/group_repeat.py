"""Group and Repeat nodes made in one step.

A new Group or Repeat node names no group (its ``group`` default is ""), so it
shows an error until the user picks one. Where the project has exactly one
group there is nothing to choose: :func:`new_node_params` gives the new node that
group (not inside that group's own body, where it would contain itself).

:func:`repeat_group_node` turns a Group node into a Repeat of the same group,
keeping its id, position, place in the node order and wires (a Group's and a
Repeat's ports are both the body's GroupInput/GroupOutput ports), as one
undoable step. :func:`unroll_repeat` goes the other way: a Repeat node becomes ``times``
Group nodes of its group, chained, so one copy can be ungrouped or changed alone.

:func:`groups_to_run` lists the groups a new Group or Repeat may run where it is added (the
quick-add list dragged off a port offers a Group and a Repeat of each that fits the wire).
"""
from __future__ import annotations

from typing import Any

from .commands import AddNode, Command, Macro, remove_nodes
from .graph import Edge, Graph, GraphError, Node


class _PutEdgeBack(Command):
    """An edge back at its old place in the edge order (the file keeps its wires' order)."""

    def __init__(self, graph: Graph, edge: Edge, index: int) -> None:
        self.graph, self.edge, self.index = graph, edge, index
        self.text = f"Connect {edge.src} to {edge.dst}"

    def do(self) -> None:
        self.graph.add_edge(self.edge, self.index)

    def undo(self) -> None:
        self.graph.remove_edge(self.edge)


def new_node_params(type_id: str, project: Graph, inside: str | None = None) -> dict[str, Any]:
    """The params a node of ``type_id`` added by the editor starts with: its ``group`` is the
    project's only group, if it has exactly one and the node is not added inside that group's body
    (``inside``); otherwise none (the spec's defaults apply)."""
    from .spec import registry

    spec = registry.find(type_id)
    param = spec.params.get("group") if spec is not None else None
    if param is None or param.kind != "group" or len(project.groups) != 1:
        return {}
    (name,) = project.groups
    return {} if name == inside else {"group": name}


def groups_to_run(project: Graph, inside: str | None = None) -> list[str]:
    """The groups a new Group node may run where the editor adds it: all of the project's, in
    order, but where it is added inside a group body (``inside``) that group and every group whose
    body runs it, directly or deeper (the node would contain itself)."""
    from .spec import registry
    from .validate import group_refs

    def runs(name: str) -> set[str]:
        seen: set[str] = set()
        todo = [name]
        while todo:  # iterative and cycle-safe: a cycle among bodies is an error the check reports
            body = project.groups.get(todo.pop())
            for node in body.nodes.values() if body is not None else ():
                spec = registry.find(node.type) if isinstance(node.type, str) else None
                for _param, ref in group_refs(spec, node.params) if spec is not None else ():
                    if ref not in seen:
                        seen.add(ref)
                        todo.append(ref)
        return seen

    return [name for name in project.groups if inside is None or (name != inside and inside not in runs(name))]


def repeatable(body: Graph) -> bool:
    """Whether a Repeat can run ``body``: each copy's outputs feed the next copy's inputs, so it
    has as many GroupOutput as GroupInput nodes (and at least one)."""
    ins = sum(1 for n in body.nodes.values() if n.type == "GroupInput")
    return ins > 0 and ins == sum(1 for n in body.nodes.values() if n.type == "GroupOutput")


def repeat_group_node(graph: Graph, node_id: str, project: Graph | None = None) -> Macro:
    """One undoable step: Group node ``node_id`` becomes a Repeat (two copies) of its group."""
    project = project or graph
    node = graph.nodes.get(node_id)
    if node is None or node.type != "Group":
        raise GraphError(f"{node_id!r} is not a Group node; select a Group node to repeat its group")
    name = node.params.get("group") or ""
    body = project.groups.get(name)
    if body is None:
        raise GraphError(f"Group node {node_id!r} names no group of this project ({name!r}); "
                         "pick its group in the inspector first")
    ins = [n for n in body.nodes.values() if n.type == "GroupInput"]
    outs = [n for n in body.nodes.values() if n.type == "GroupOutput"]
    if len(ins) != len(outs):
        raise GraphError(f"group {name!r} has {len(ins)} input{'s' * (len(ins) != 1)} but {len(outs)} "
                         f"output{'s' * (len(outs) != 1)}; a Repeat feeds each copy's outputs to the next "
                         "copy's inputs, so give the group as many GroupOutput as GroupInput nodes")
    index = list(graph.nodes).index(node_id)
    edges = [(i, e) for i, e in enumerate(graph.edges) if node_id in (e.src.node, e.dst.node)]
    repeat = Node(node_id, "Repeat", {"group": name}, node.pos)
    children: list[Command] = [remove_nodes(graph, [node_id]), AddNode(graph, repeat, index)]
    children += [_PutEdgeBack(graph, e, i) for i, e in edges]  # ascending: each lands where it was
    return Macro(f"Repeat group {name} ({node_id})", children)


UNROLL_STEP = 240.0  # scene px between the copies' cards (generate.COLUMN: a card and its wires' labels)


def unroll_repeat(graph: Graph, node_id: str, project: Graph | None = None) -> Macro:
    """One undoable step: Repeat node ``node_id`` becomes ``times`` Group nodes of its group in a row,
    each output i wired to the next one's input i, as the Repeat ran them (each with its own weights,
    as each copy had). The first keeps the Repeat's id, place and incoming wires, the last its outgoing
    ones; nodes right of it move right to make room. Each may then be ungrouped or edited alone."""
    from .commands import Connect, Move, fresh_id
    from .spec import registry

    project = project or graph
    node = graph.nodes.get(node_id)
    if node is None or node.type != "Repeat":
        raise GraphError(f"{node_id!r} is not a Repeat node; select a Repeat node to unroll it")
    name = node.params.get("group") or ""
    if name not in project.groups:
        raise GraphError(f"Repeat node {node_id!r} names no group of this project ({name!r}); "
                         "pick its group in the inspector first")
    spec = registry.find("Repeat")
    times = int(node.params.get("times", spec.params["times"].default if spec is not None else 2))
    ins, outs = graph.ports(node_id)
    taken = set(graph.nodes)
    ids = [node_id]
    for k in range(2, times + 1):
        ids.append(fresh_id(f"{node_id}_{k}", taken))
        taken.add(ids[-1])
    x, y = node.pos
    room = UNROLL_STEP * (times - 1)
    shifted = {n.id: (n.pos[0] + room, n.pos[1]) for n in graph.nodes.values() if n.id != node_id and n.pos[0] > x}
    index = list(graph.nodes).index(node_id)
    incoming = [e for e in graph.edges if e.dst.node == node_id]
    outgoing = [e for e in graph.edges if e.src.node == node_id]
    children: list[Command] = [remove_nodes(graph, [node_id])]
    if shifted:
        children.append(Move(graph, shifted))
    children += [AddNode(graph, Node(nid, "Group", {"group": name}, (x + UNROLL_STEP * k, y)), index + k)
                 for k, nid in enumerate(ids)]
    children += [Connect(graph, e.src, e.dst) for e in incoming]  # (the first copy keeps the id)
    for a, b in zip(ids, ids[1:]):
        children += [Connect(graph, f"{a}.{po}", f"{b}.{pi}") for po, pi in zip(outs, ins)]
    children += [Connect(graph, f"{ids[-1]}.{e.src.port}", e.dst) for e in outgoing]
    return Macro(f"Unroll {node_id} into {times} Group nodes", children)
