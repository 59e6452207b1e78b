"""Copy, cut, paste and duplicate: selections travel as project-format JSON.

The payload is a small project document (DESIGN section 2: ``nodes``, ``edges``
among them, and the ``groups`` their Group/Repeat/coupling params refer to)
under a custom MIME type, so it pastes into another window or another file.
Pasting renames colliding node ids (``add_subgraph``) and colliding, different
group definitions, all as one undoable step.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from revstudio.core import project
from revstudio.core.commands import AddSubgraph, Command, Macro, SetGroup, add_subgraph
from revstudio.core.graph import Edge, Graph, Node
from revstudio.core.params import to_json

from .display import group_param_names

MIME = "application/x-revstudio-graph"


class ClipboardError(ValueError):
    """The clipboard holds something that is not a revstudio selection."""


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
    """The payload for ``node_ids`` of ``graph``: a project holding them, their edges and groups."""
    chosen = {n for n in node_ids if n in graph.nodes}
    sub = Graph("clipboard")
    sub.nodes = {k: n.copy() for k, n in graph.nodes.items() if k in chosen}  # keep the document's order
    sub.edges = [e for e in graph.edges if e.src.node in chosen and e.dst.node in chosen]
    # dumps only reads the bodies, so the originals can be shared here
    sub.groups = {name: graph.groups[name] for name in _referenced_groups(graph, sub.nodes.values())}
    # the file's record of which package provides a type that is not installed here travels too
    sub.plugins = getattr(graph, "plugins", {})
    return project.dumps(sub)


def decode(text: str) -> tuple[list[Node], list[Edge], dict[str, tuple[list[Node], list[Edge]]]]:
    """Nodes, edges and group bodies from a payload; ClipboardError if it is not one."""
    return _parts(_load(text))


def _parts(sub: Graph) -> tuple[list[Node], list[Edge], dict[str, tuple[list[Node], list[Edge]]]]:
    groups = {name: (list(body.nodes.values()), list(body.edges)) for name, body in sub.groups.items()}
    return list(sub.nodes.values()), list(sub.edges), groups


def _load(text: str) -> Graph:
    if not text.lstrip().startswith("{"):
        raise ClipboardError("the clipboard does not hold revstudio nodes")
    try:
        sub = project.loads(text, source="clipboard")
    except project.ProjectError as exc:
        raise ClipboardError(str(exc)) from None
    return sub


def _graph_json(nodes: Iterable[Node], edges: Iterable[Edge]) -> Any:
    return ([(n.id, n.type, to_json(n.params), tuple(n.pos)) for n in nodes], [str(e) for e in edges])


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
) -> tuple[Command, dict[str, str], dict[str, str]]:
    """One undoable paste of ``text`` into ``graph`` (``project`` owns the groups).

    ``at`` puts the pasted bounding box's top-left there; otherwise positions
    shift by ``offset``. Returns the command, old id -> new id, and old name -> new
    name of each group renamed because ``project`` has a different one of that name.
    """
    payload = _load(text)
    nodes, edges, groups = _parts(payload)
    if not nodes:
        raise ClipboardError("the clipboard holds no nodes")
    # Where a pasted node's plugin is not installed, the record of its package keeps the check
    # naming what to install, and the saved file keeping it. A record is not an edit: saving
    # writes only the types the project uses, so one left behind by an undone paste is dropped.
    for type_id, record in payload.plugins.items():
        project.plugins.setdefault(type_id, dict(record))
    renamed: dict[str, str] = {}
    taken = set(project.groups) | set(groups)
    changed = True
    while changed:  # renaming f makes a block that uses f differ too: repeat until stable
        changed = False
        for name, (bnodes, bedges) in groups.items():
            existing = project.groups.get(name)
            if name in renamed or existing is None:
                continue
            if not _same_body(existing, _rename_refs(bnodes, renamed), bedges):
                new = f"{name}_1"
                i = 1
                while new in taken:
                    i += 1
                    new = f"{name}_{i}"
                renamed[name] = new
                taken.add(new)
                changed = True
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
        return sub, sub.mapping, renamed
    return Macro(sub.text, [*children, sub]), sub.mapping, renamed


def paste_message(done: str, mapping: dict[str, str], groups: dict[str, str]) -> str:
    """The status line of a paste (``done``: "Pasted", "Duplicated"): how many nodes, which were
    renamed, and which groups were pasted under a new name (their nodes now name that one)."""
    renamed = [f"{a} → {b}" for a, b in mapping.items() if a != b]
    text = f"{done} {len(mapping)} node{'s' * (len(mapping) != 1)}"
    text += f" (renamed {', '.join(renamed[:4])})" if renamed else ""
    if len(groups) == 1:
        (old, new), = groups.items()
        text += f"; group {old} differs from this project's {old}: pasted as {new}"
    elif groups:
        text += (f"; groups {', '.join(groups)} differ from this project's: pasted as "
                 f"{', '.join(groups.values())}")
    return text
