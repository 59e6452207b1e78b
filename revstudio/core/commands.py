"""Undoable edits as tiny pure-Python commands.

Each command is a do/undo pair of a few lines that calls graph primitives
only (never a view). Compound edits are built from child commands: removing a
node first removes its edges. The Qt layer wraps these in ``QUndoCommand``;
headless code and tests use :class:`UndoStack`.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from .graph import Edge, Graph, Node, PortRef


class Command:
    """Base: ``do`` applies the edit, ``undo`` reverts it exactly."""

    text = "Edit"

    def do(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def undo(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def merge_id(self) -> Any:
        """Commands with equal non-None ids may merge (e.g. typing into one field)."""
        return None

    def merge(self, other: "Command") -> bool:
        return False


class Macro(Command):
    """A compound edit: children run in order and undo in reverse."""

    def __init__(self, text: str, children: Sequence[Command] = ()) -> None:
        self.text = text
        self.children: list[Command] = list(children)

    def do(self) -> None:
        done: list[Command] = []
        try:
            for child in self.children:
                child.do()
                done.append(child)
        except Exception:
            for child in reversed(done):
                child.undo()
            raise

    def undo(self) -> None:
        for child in reversed(self.children):
            child.undo()


class AddNode(Command):
    def __init__(self, graph: Graph, node: Node) -> None:
        self.graph, self.node = graph, node.copy()
        self.text = f"Add {node.type} {node.id}"

    def do(self) -> None:
        self.graph.insert_node(self.node.copy())

    def undo(self) -> None:
        self.graph.remove_node(self.node.id)


class _RemoveBareNode(Command):
    def __init__(self, graph: Graph, node_id: str) -> None:
        self.graph, self.node = graph, graph.node(node_id).copy()
        self.index = list(graph.nodes).index(node_id)

    def do(self) -> None:
        self.graph.remove_node(self.node.id)

    def undo(self) -> None:
        # Restore the original position in the node order so files stay identical.
        self.graph.insert_node(self.node.copy())
        items = list(self.graph.nodes.items())
        moved = items.pop()
        items.insert(self.index, moved)
        self.graph.nodes.clear()
        self.graph.nodes.update(items)


class Connect(Command):
    def __init__(self, graph: Graph, src: str | PortRef, dst: str | PortRef) -> None:
        s = src if isinstance(src, PortRef) else PortRef.parse(src)
        d = dst if isinstance(dst, PortRef) else PortRef.parse(dst)
        self.graph, self.edge = graph, Edge(s, d)
        self.text = f"Connect {s} to {d}"

    def do(self) -> None:
        self.graph.add_edge(self.edge)

    def undo(self) -> None:
        self.graph.remove_edge(self.edge)


class Disconnect(Command):
    def __init__(self, graph: Graph, edge: Edge) -> None:
        self.graph, self.edge = graph, edge
        self.index = graph.edges.index(edge)
        self.text = f"Disconnect {edge}"

    def do(self) -> None:
        self.graph.remove_edge(self.edge)

    def undo(self) -> None:
        self.graph.add_edge(self.edge)
        # keep the edge order stable for byte-identical saves
        self.graph.edges.remove(self.edge)
        self.graph.edges.insert(self.index, self.edge)


def remove_nodes(graph: Graph, node_ids: Iterable[str]) -> Macro:
    """Remove nodes: first every edge touching them, then the nodes."""
    ids = [n for n in node_ids if n in graph.nodes]
    edges = [e for e in graph.edges if e.src.node in ids or e.dst.node in ids]
    # Disconnect in reverse order so each recorded index is still valid on undo.
    children: list[Command] = [Disconnect(graph, e) for e in reversed(edges)]
    order = sorted(ids, key=list(graph.nodes).index, reverse=True)
    children += [_RemoveBareNode(graph, n) for n in order]
    text = f"Remove {ids[0]}" if len(ids) == 1 else f"Remove {len(ids)} nodes"
    return Macro(text, children)


def RemoveNode(graph: Graph, node_id: str) -> Macro:  # noqa: N802 - reads like a command class
    return remove_nodes(graph, [node_id])


def connect_replacing(graph: Graph, src: str | PortRef, dst: str | PortRef) -> Command:
    """Connect, first removing whatever already feeds the input port (node editors do this)."""
    d = dst if isinstance(dst, PortRef) else PortRef.parse(dst)
    old = [Disconnect(graph, e) for e in graph.edges_into(d.node, d.port)]
    new = Connect(graph, src, d)
    return Macro(new.text, [*old, new]) if old else new


class SetParam(Command):
    def __init__(self, graph: Graph, node_id: str, name: str, value: Any) -> None:
        self.graph, self.node_id, self.name, self.value = graph, node_id, name, value
        self.old = graph.node(node_id).params.get(name)
        self.text = f"Set {node_id}.{name}"

    def do(self) -> None:
        self.graph.set_param(self.node_id, self.name, self.value)

    def undo(self) -> None:
        self.graph.set_param(self.node_id, self.name, self.old)

    def merge_id(self) -> Any:
        return ("param", id(self.graph), self.node_id, self.name)

    def merge(self, other: Command) -> bool:
        if isinstance(other, SetParam) and other.merge_id() == self.merge_id():
            self.value = other.value
            return True
        return False


class Move(Command):
    """Move one or more nodes; a drag pushes one of these on release."""

    def __init__(self, graph: Graph, moves: dict[str, tuple[float, float]]) -> None:
        self.graph = graph
        self.new = {k: (float(v[0]), float(v[1])) for k, v in moves.items()}
        self.old = {k: graph.node(k).pos for k in moves}
        self.text = "Move " + (next(iter(moves)) if len(moves) == 1 else f"{len(moves)} nodes")

    def do(self) -> None:
        for k, pos in self.new.items():
            self.graph.move(k, pos)

    def undo(self) -> None:
        for k, pos in self.old.items():
            self.graph.move(k, pos)


class SetGroup(Command):
    """Add, replace or remove a group body in ``graph.groups``."""

    def __init__(self, graph: Graph, name: str, body: Graph | None) -> None:
        self.graph, self.name, self.body = graph, name, body
        self.old = graph.groups.get(name)
        self.index = list(graph.groups).index(name) if name in graph.groups else None
        self.text = f"Set group {name}"

    def do(self) -> None:
        self.graph.set_group(self.name, self.body)

    def undo(self) -> None:
        self.graph.set_group(self.name, self.old)
        if self.old is not None and self.index is not None:
            items = list(self.graph.groups.items())
            item = next(i for i in items if i[0] == self.name)
            items.remove(item)
            items.insert(self.index, item)
            self.graph.groups.clear()
            self.graph.groups.update(items)


class UndoStack:
    """A headless undo stack with the same semantics as ``QUndoStack``."""

    def __init__(self) -> None:
        self._commands: list[Command] = []
        self._index = 0
        self._clean = 0

    def push(self, cmd: Command) -> None:
        cmd.do()
        del self._commands[self._index:]
        if self._commands and self._index == len(self._commands) and self._commands[-1].merge(cmd):
            return
        self._commands.append(cmd)
        self._index += 1

    def undo(self) -> bool:
        if self._index == 0:
            return False
        self._index -= 1
        self._commands[self._index].undo()
        return True

    def redo(self) -> bool:
        if self._index == len(self._commands):
            return False
        self._commands[self._index].do()
        self._index += 1
        return True

    def can_undo(self) -> bool:
        return self._index > 0

    def can_redo(self) -> bool:
        return self._index < len(self._commands)

    def set_clean(self) -> None:
        self._clean = self._index

    def is_clean(self) -> bool:
        return self._clean == self._index

    def __len__(self) -> int:
        return len(self._commands)

    @property
    def index(self) -> int:
        return self._index
