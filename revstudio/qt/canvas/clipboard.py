"""Copy, cut, paste and duplicate: selections travel as project-format JSON.

The payload is a small project document (DESIGN section 2: ``nodes``, ``edges``
among them, and the ``groups`` their Group/Repeat/coupling params refer to)
under a custom MIME type, so it pastes into another window or another file.
Pasting renames colliding node ids (``add_subgraph``) and colliding, different
group definitions, all as one undoable step.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from revstudio.core.commands import AddSubgraph, Command, Macro, SetGroup, add_subgraph
from revstudio.core.graph import Edge, Graph, GraphError, Node, PortRef, valid_id
from revstudio.core.params import to_json

from .display import group_param_names

MIME = "application/x-revstudio-graph"
FORMAT, VERSION = "revstudio", 1
MAX_NODES = 20_000  # a clipboard larger than this is not ours, or not sane


class ClipboardError(ValueError):
    """The clipboard holds something that is not a revstudio selection."""


def _node_json(node: Node) -> dict[str, Any]:
    out: dict[str, Any] = {"id": node.id, "type": node.type}
    if node.params:
        out["params"] = {k: to_json(v) for k, v in node.params.items()}
    out["pos"] = [node.pos[0], node.pos[1]]
    return out


def _graph_json(nodes: Iterable[Node], edges: Iterable[Edge]) -> dict[str, Any]:
    return {"nodes": [_node_json(n) for n in nodes], "edges": [e.to_json() for e in edges]}


def _referenced_groups(graph: Graph, nodes: Iterable[Node]) -> list[str]:
    """Group names the nodes refer to, following bodies that refer to other groups."""
    out: list[str] = []
    stack = list(nodes)
    while stack:
        node = stack.pop()
        for name in group_param_names(node.type):
            ref = node.params.get(name)
            if isinstance(ref, str) and ref in graph.groups and ref not in out:
                out.append(ref)
                stack.extend(graph.groups[ref].nodes.values())
    return out


def encode(graph: Graph, node_ids: Iterable[str]) -> str:
    """The JSON payload for ``node_ids`` of ``graph`` and the edges among them."""
    ids = [n for n in node_ids if n in graph.nodes]
    chosen = set(ids)
    nodes = [graph.nodes[n] for n in graph.nodes if n in chosen]  # keep the document's order
    edges = [e for e in graph.edges if e.src.node in chosen and e.dst.node in chosen]
    doc: dict[str, Any] = {"format": FORMAT, "version": VERSION, "name": "clipboard", **_graph_json(nodes, edges)}
    groups = _referenced_groups(graph, nodes)
    doc["groups"] = {name: _graph_json(graph.groups[name].nodes.values(), graph.groups[name].edges)
                     for name in groups}
    return json.dumps(doc, indent=1)


def _parse_nodes(data: Any, where: str) -> tuple[list[Node], list[Edge]]:
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise ClipboardError(f"{where}: expected an object with a 'nodes' list")
    raw_nodes = data["nodes"]
    if len(raw_nodes) > MAX_NODES:
        raise ClipboardError(f"{where}: {len(raw_nodes)} nodes is more than a paste can take")
    nodes: list[Node] = []
    for i, raw in enumerate(raw_nodes):
        if not isinstance(raw, dict) or not valid_id(raw.get("id")) or not isinstance(raw.get("type"), str):
            raise ClipboardError(f"{where}: node {i} needs a valid 'id' and a 'type'")
        params = raw.get("params", {})
        pos = raw.get("pos", [0, 0])
        if not isinstance(params, dict):
            raise ClipboardError(f"{where}: node {raw['id']!r} has params that are not an object")
        if not (isinstance(pos, list) and len(pos) == 2 and all(isinstance(v, (int, float)) for v in pos)):
            raise ClipboardError(f"{where}: node {raw['id']!r} has a position that is not [x, y]")
        nodes.append(Node(raw["id"], raw["type"], dict(params), (float(pos[0]), float(pos[1]))))
    edges: list[Edge] = []
    for i, raw in enumerate(data.get("edges", [])):
        try:
            edges.append(Edge(PortRef.parse(raw[0]), PortRef.parse(raw[1])))
        except (GraphError, TypeError, IndexError, KeyError):
            raise ClipboardError(f"{where}: edge {i} is not a pair of 'node.port' strings") from None
    return nodes, edges


def decode(text: str) -> tuple[list[Node], list[Edge], dict[str, tuple[list[Node], list[Edge]]]]:
    """Nodes, edges and group bodies from a payload; ClipboardError if it is not one."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ClipboardError(f"the clipboard does not hold revstudio nodes ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ClipboardError("the clipboard does not hold revstudio nodes")
    if not isinstance(data.get("version"), int) or data["version"] > VERSION:
        raise ClipboardError("the clipboard was filled by a newer revstudio: upgrade to paste it")
    nodes, edges = _parse_nodes(data, "clipboard")
    groups_raw = data.get("groups", {})
    if not isinstance(groups_raw, dict):
        raise ClipboardError("clipboard: 'groups' is not an object")
    groups = {str(k): _parse_nodes(v, f"clipboard group {k!r}") for k, v in groups_raw.items()}
    return nodes, edges, groups


def _same_body(body: Graph, nodes: list[Node], edges: list[Edge]) -> bool:
    return _graph_json(body.nodes.values(), body.edges) == _graph_json(nodes, edges)


def _rename_refs(nodes: list[Node], renamed: dict[str, str]) -> list[Node]:
    out = []
    for node in nodes:
        node = node.copy()
        for name in group_param_names(node.type):
            if node.params.get(name) in renamed:
                node.params[name] = renamed[node.params[name]]
        out.append(node)
    return out


def paste_command(
    project: Graph, graph: Graph, text: str, at: tuple[float, float] | None = None,
    offset: tuple[float, float] = (40.0, 40.0),
) -> tuple[Command, dict[str, str]]:
    """One undoable paste of ``text`` into ``graph`` (``project`` owns the groups).

    ``at`` puts the pasted bounding box's top-left there; otherwise positions
    shift by ``offset``. Returns the command and old id -> new id.
    """
    nodes, edges, groups = decode(text)
    if not nodes:
        raise ClipboardError("the clipboard holds no nodes")
    renamed: dict[str, str] = {}
    taken = set(project.groups)
    for name, (bnodes, bedges) in groups.items():
        existing = project.groups.get(name)
        if existing is not None and not _same_body(existing, bnodes, bedges):
            new = name
            i = 1
            while new in taken:
                new = f"{name}_{i}"
                i += 1
            renamed[name] = new
            taken.add(new)
    children: list[Command] = []
    for name, (bnodes, bedges) in groups.items():
        target = renamed.get(name, name)
        if target in project.groups:
            continue  # the same definition is already there: share it
        body = Graph(target)
        for node in _rename_refs(bnodes, renamed):
            body.nodes[node.id] = node
        body.edges = list(bedges)
        children.append(SetGroup(project, target, body))
    nodes = _rename_refs(nodes, renamed)
    if at is not None:
        left = min(n.pos[0] for n in nodes)
        top = min(n.pos[1] for n in nodes)
        offset = (at[0] - left, at[1] - top)
    sub: AddSubgraph = add_subgraph(graph, nodes, edges, offset=offset)
    if not children:
        return sub, sub.mapping
    return Macro(sub.text, [*children, sub]), sub.mapping
