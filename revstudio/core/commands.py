"""Undoable edits as tiny pure-Python commands.

Each command is a do/undo pair of a few lines that calls graph primitives
only (never a view). Compound edits are built from child commands: removing a
node first removes its edges. The Qt layer wraps these in ``QUndoCommand``;
headless code and tests use :class:`UndoStack`.

Undo is exact: node order, edge order, group order and which params are set
explicitly all come back, so a save after undo is byte-identical to the save
before the edit. Commands note what they replace when they *do* (not when
they are built), so a command may be built before the edits that precede it
in a :class:`Macro`.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .graph import Edge, Graph, GraphError, Node, PortRef
from .node_ids import copy_id, fresh_id  # noqa: F401 - fresh_id: callers import it from here

_UNSET = object()


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

    def merge(self, other: Command) -> bool:
        return False

    def is_noop(self) -> bool:
        """True once merging has brought the edit back to where it started (the stack drops it)."""
        return False

    def rebase_training(self, rebase: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Re-express the ``training`` sections this command holds with ``rebase`` (Save As to another
        folder rewrites relative data paths; what undo/redo bring back must name the same data)."""


class Macro(Command):
    """A compound edit: children run in order and undo in reverse.

    If a child fails, the children already done are undone and the error
    propagates, so a failed macro leaves the graph as it found it.
    """

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

    def merge_id(self) -> Any:
        # One edit of several nodes (the inspector's shared fields) merges as one node's does.
        ids = tuple(child.merge_id() for child in self.children)
        return ("macro", ids) if ids and None not in ids else None

    def merge(self, other: Command) -> bool:
        if not isinstance(other, Macro) or self.merge_id() is None or other.merge_id() != self.merge_id():
            return False
        return all([mine.merge(theirs) for mine, theirs in zip(self.children, other.children)])

    def is_noop(self) -> bool:
        return bool(self.children) and all(child.is_noop() for child in self.children)

    def rebase_training(self, rebase: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        for child in self.children:
            child.rebase_training(rebase)


class AddNode(Command):
    """Add one node (at the end of the node order unless ``index`` is given)."""

    def __init__(self, graph: Graph, node: Node, index: int | None = None) -> None:
        self.graph, self.node, self.index = graph, node.copy(), index
        self.text = f"Add {node.type} {node.id}"

    def do(self) -> None:
        self.graph.insert_node(self.node.copy(), self.index)

    def undo(self) -> None:
        self.graph.remove_node(self.node.id)


class _RemoveBareNode(Command):
    """Remove a node that has no edges left; undo puts it back at its old index."""

    def __init__(self, graph: Graph, node_id: str) -> None:
        self.graph, self.node_id = graph, node_id
        self.node: Node | None = None
        self.index = 0
        self.text = f"Remove {node_id}"

    def do(self) -> None:
        self.index = list(self.graph.nodes).index(self.node_id) if self.node_id in self.graph.nodes else 0
        self.node = self.graph.remove_node(self.node_id)

    def undo(self) -> None:
        assert self.node is not None
        self.graph.insert_node(self.node, self.index)


# The wire a Disconnect last took off each graph: (edge, its index, the edge list it left). The edge
# order is read by the compiler and the estimate (a checkpoint plan follows it), so a wire drawn
# again where one was taken off, nothing else rewired since, goes back to its place: the project is
# then the one it was, its figures the same, and the editor's memo of that state serves them.
_TAKEN_OFF: weakref.WeakKeyDictionary[Graph, tuple[Edge, int, tuple[Edge, ...]]] = weakref.WeakKeyDictionary()


def _old_place(graph: Graph, edge: Edge) -> int | None:
    """Where ``edge`` stood before the last Disconnect took it off ``graph``, when the edges are still
    those it left (None: append it)."""
    taken = _TAKEN_OFF.get(graph)
    if taken is None or taken[0] != edge or len(taken[2]) != len(graph.edges) or tuple(graph.edges) != taken[2]:
        return None
    return taken[1]


class Connect(Command):
    """Add one edge (no port checks: ``graph.check_connect`` is the query for that): at the end of the
    edge order, or where the same wire stood when the last edit of the wires took it off."""

    def __init__(self, graph: Graph, src: str | PortRef, dst: str | PortRef) -> None:
        s = src if isinstance(src, PortRef) else PortRef.parse(src)
        d = dst if isinstance(dst, PortRef) else PortRef.parse(dst)
        self.graph, self.edge = graph, Edge(s, d)
        self.text = f"Connect {s} to {d}"

    def do(self) -> None:
        for ref in (self.edge.src, self.edge.dst):
            if ref.node not in self.graph.nodes:
                raise GraphError(f"edge {self.edge} names a node {ref.node!r} that does not exist")
        if self.edge in self.graph.edges:
            raise GraphError(f"edge {self.edge} already exists")
        self.graph.add_edge(self.edge, _old_place(self.graph, self.edge))

    def undo(self) -> None:
        self.graph.remove_edge(self.edge)


class Disconnect(Command):
    """Remove one edge; undo puts it back at its old place in the edge order."""

    def __init__(self, graph: Graph, edge: Edge) -> None:
        self.graph, self.edge = graph, edge
        self.index = 0
        self.text = f"Disconnect {edge}"

    def do(self) -> None:
        try:
            self.index = self.graph.edges.index(self.edge)
        except ValueError:
            raise GraphError(f"there is no edge {self.edge}") from None
        self.graph.remove_edge(self.edge)
        _TAKEN_OFF[self.graph] = (self.edge, self.index, tuple(self.graph.edges))

    def undo(self) -> None:
        self.graph.add_edge(self.edge, self.index)


def remove_nodes(graph: Graph, node_ids: Iterable[str]) -> Macro:
    """Remove nodes: first every edge touching them, then the nodes."""
    ids = list(dict.fromkeys(n for n in node_ids if n in graph.nodes))
    chosen = set(ids)
    edges = [e for e in graph.edges if e.src.node in chosen or e.dst.node in chosen]
    # Remove the last edge first, so each restored index is right on undo.
    children: list[Command] = [Disconnect(graph, e) for e in reversed(edges)]
    position = {n: i for i, n in enumerate(graph.nodes)}
    children += [_RemoveBareNode(graph, n) for n in sorted(ids, key=position.__getitem__, reverse=True)]
    if not ids:
        text = "Remove nothing"
    else:
        text = f"Remove {ids[0]}" if len(ids) == 1 else f"Remove {len(ids)} nodes"
    return Macro(text, children)


def RemoveNode(graph: Graph, node_id: str) -> Macro:  # noqa: N802 - reads like a command class
    return remove_nodes(graph, [node_id])


def splice_into(graph: Graph, node_id: str, edge: Edge, in_port: str, out_port: str) -> list[Command]:
    """The commands that put node ``node_id`` into the wire ``edge``: the wire goes, the node's
    ``in_port`` takes what it carried and its ``out_port`` feeds where it went."""
    return [Disconnect(graph, edge), Connect(graph, edge.src, PortRef(node_id, in_port)),
            Connect(graph, PortRef(node_id, out_port), edge.dst)]


def connect_replacing(graph: Graph, src: str | PortRef, dst: str | PortRef) -> Command:
    """Connect, first removing whatever already feeds the input port (node editors do this)."""
    d = dst if isinstance(dst, PortRef) else PortRef.parse(dst)
    old = [Disconnect(graph, e) for e in reversed(graph.edges_into(d.node, d.port))]
    new = Connect(graph, src, d)
    return Macro(new.text, [*old, new]) if old else new


class SetParam(Command):
    """Set one param; ``None`` resets it to the spec default (removes it from the file)."""

    def __init__(self, graph: Graph, node_id: str, name: str, value: Any) -> None:
        self.graph, self.node_id, self.name, self.value = graph, node_id, name, value
        self.old: Any = _UNSET
        self.order: list[str] = []
        self.text = f"Set {node_id}.{name}"

    def do(self) -> None:
        params = self.graph.node(self.node_id).params
        self.old = params.get(self.name, _UNSET)
        self.order = list(params)
        self.graph.set_param(self.node_id, self.name, self.value)

    def undo(self) -> None:
        if self.old is _UNSET:
            self.graph.set_param(self.node_id, self.name, None)
            return
        params = self.graph.node(self.node_id).params
        self.graph.set_param(self.node_id, self.name, self.old)
        if list(params) != self.order:
            # A reset removed the key: put it back at its old place (files sort
            # params anyway; the inspector lists them in this order).
            items = [(k, params[k]) for k in self.order if k in params]
            params.clear()
            params.update(items)

    def merge_id(self) -> Any:
        return ("param", id(self.graph), self.node_id, self.name)

    def merge(self, other: Command) -> bool:
        if isinstance(other, SetParam) and other.merge_id() == self.merge_id():
            self.value = other.value
            return True
        return False

    def is_noop(self) -> bool:
        # typing "1e3" over 4 commits 1, then the invalid text puts 4 back: nothing changed
        return self.value is None if self.old is _UNSET else self.value == self.old


class Move(Command):
    """Move one or more nodes; a drag pushes one of these on release."""

    def __init__(self, graph: Graph, moves: Mapping[str, Iterable[float]]) -> None:
        self.graph = graph
        self.new: dict[str, tuple[float, float]] = {}
        for k, v in moves.items():
            x, y = v
            self.new[k] = (float(x), float(y))
        self.old: dict[str, tuple[float, float]] = {}
        self.text = "Move " + (next(iter(moves)) if len(moves) == 1 else f"{len(moves)} nodes")

    def do(self) -> None:
        self.old = {k: self.graph.node(k).pos for k in self.new}
        for k, pos in self.new.items():
            self.graph.move(k, pos)

    def undo(self) -> None:
        for k, pos in self.old.items():
            self.graph.move(k, pos)


class Nudge(Move):
    """Move nodes by a key press; a held key's repeats merge into one step with it."""

    def merge_id(self) -> Any:
        return ("nudge", id(self.graph), frozenset(self.new))

    def merge(self, other: Command) -> bool:
        if isinstance(other, Nudge) and other.merge_id() == self.merge_id():
            self.new = dict(other.new)  # ``self.old`` stays where the key went down
            return True
        return False

    def is_noop(self) -> bool:
        return bool(self.old) and self.old == self.new


class RenameNode(Command):
    """Give a node a new id: its wires follow, and ``graph.renamed`` records the alias so a
    checkpoint saved under the old name still loads (the layer's attribute is the id)."""

    def __init__(self, graph: Graph, old: str, new: str) -> None:
        self.graph, self.old, self.new = graph, old, new
        self.before: dict[str, str] = {}
        self.text = f"Rename {old} to {new}"

    def do(self) -> None:
        self.before = dict(self.graph.renamed)
        self.graph.rename_node(self.old, self.new)
        renamed = {k: (self.new if v == self.old else v) for k, v in self.before.items()}
        renamed.setdefault(self.old, self.new)
        # renaming back to an earlier name needs no alias for it
        self.graph.renamed = {k: v for k, v in renamed.items() if k != v}

    def undo(self) -> None:
        self.graph.rename_node(self.new, self.old)
        self.graph.renamed = dict(self.before)


class SetGroup(Command):
    """Add, replace or (with ``body=None``) remove a group body in ``graph.groups``."""

    def __init__(self, graph: Graph, name: str, body: Graph | None) -> None:
        self.graph, self.name, self.body = graph, name, body
        self.old: Graph | None = None
        self.index: int | None = None
        self.text = f"Set group {name}" if body is not None else f"Remove group {name}"

    def do(self) -> None:
        self.old = self.graph.groups.get(self.name)
        self.index = list(self.graph.groups).index(self.name) if self.old is not None else None
        self.graph.set_group(self.name, self.body)

    def undo(self) -> None:
        if self.body is not None and self.old is None:
            self.graph.set_group(self.name, None)
        elif self.body is None and self.old is not None:
            self.graph.set_group(self.name, self.old, self.index)
        elif self.old is not None:  # a replacement keeps its place
            self.graph.set_group(self.name, self.old)


class SetTraining(Command):
    """Replace the project's ``training`` section (run settings, the batch behind the memory figures)."""

    def __init__(self, graph: Graph, section: Mapping[str, Any], text: str = "Change run settings") -> None:
        self.graph, self.section, self.text = graph, dict(section), text
        self.old: dict[str, Any] = {}

    def do(self) -> None:
        self.old = self.graph.set_training(self.section)

    def undo(self) -> None:
        self.graph.set_training(self.old)

    def rebase_training(self, rebase: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.section, self.old = rebase(self.section), rebase(self.old)


class AddSubgraph(Macro):
    """Nodes and the edges among them added as one step (paste, duplicate).

    ``mapping`` maps each given node id to the id it got in ``graph``: the same
    id where it was free, a copy's (``conv1`` -> ``conv1_copy``) where it collided.
    """

    def __init__(self, text: str, children: Sequence[Command], mapping: dict[str, str]) -> None:
        super().__init__(text, children)
        self.mapping = mapping


def add_subgraph(
    graph: Graph,
    nodes: Iterable[Node],
    edges: Iterable[Edge | tuple[str, str] | Sequence[str]] = (),
    offset: tuple[float, float] = (0.0, 0.0),
) -> AddSubgraph:
    """Add copies of ``nodes`` and of the ``edges`` among them, renaming ids that collide
    (``conv1`` -> ``conv1_copy``: :func:`copy_id`).

    Edges with an end outside ``nodes`` are left out (a copied selection loses
    its links to the rest of the graph). ``offset`` shifts every position.
    The returned command's ``mapping`` says which id each node got.
    """
    taken: set[str] = set(graph.nodes)
    mapping: dict[str, str] = {}
    children: list[Command] = []
    dx, dy = offset
    for node in nodes:
        if node.id in mapping:
            raise GraphError(f"node id {node.id!r} appears twice in what is being added")
        new_id = copy_id(node.id, taken)
        taken.add(new_id)
        mapping[node.id] = new_id
        copy = node.copy()
        copy.id = new_id
        copy.pos = (float(node.pos[0]) + dx, float(node.pos[1]) + dy)
        children.append(AddNode(graph, copy))
    seen: set[Edge] = set()
    for raw in edges:
        edge = raw if isinstance(raw, Edge) else Edge(PortRef.parse(raw[0]), PortRef.parse(raw[1]))
        if edge.src.node not in mapping or edge.dst.node not in mapping:
            continue
        new = Edge(PortRef(mapping[edge.src.node], edge.src.port), PortRef(mapping[edge.dst.node], edge.dst.port))
        if new not in seen:
            seen.add(new)
            children.append(Connect(graph, new.src, new.dst))
    count = len(mapping)
    text = f"Paste {next(iter(mapping.values()))}" if count == 1 else f"Paste {count} nodes"  # the id given
    return AddSubgraph(text, children, mapping)


paste = add_subgraph


class UndoStack:
    """A headless undo stack with the same semantics as ``QUndoStack``.

    Like Qt, a command merges into the previous one (same ``merge_id``) unless
    the stack is at its clean state, and pushing after an undo drops the
    commands that could have been redone (and a clean state among them).
    """

    def __init__(self) -> None:
        self._commands: list[Command] = []
        self._index = 0
        self._clean = 0

    def push(self, cmd: Command) -> None:
        cmd.do()
        del self._commands[self._index:]
        if self._clean > self._index:
            self._clean = -1  # the saved state can no longer be reached
        if (
            self._commands
            and self._clean != self._index
            and self._commands[-1].merge_id() is not None
            and self._commands[-1].merge(cmd)
        ):
            if self._commands[-1].is_noop():  # as Qt drops a command made obsolete by a merge
                self._commands.pop()
                self._index -= 1
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

    def clear(self) -> None:
        self._commands.clear()
        self._index = self._clean = 0

    def __len__(self) -> int:
        return len(self._commands)

    @property
    def index(self) -> int:
        return self._index
