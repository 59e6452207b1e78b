"""The facts a :class:`~revstudio.core.graph.Graph` stores, as values: ids, port references, edges, nodes.

They know nothing of a graph: ``valid_id`` is the one id rule (nodes, ports, groups),
``PortRef`` and ``Edge`` are frozen and ordered (sets, sorting, undo), ``Node`` copies
itself. ``core.graph`` re-exports every public name, so ``from revstudio.core.graph
import Edge`` keeps working.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# 1-64 characters, no whitespace, dots or control characters. Use ``valid_id``
# (a full match: ``$`` alone would let a trailing newline through).
ID_PATTERN = re.compile(r"[^\s.\x00-\x1f\x7f]{1,64}")


def valid_id(text: object) -> bool:
    """Whether ``text`` may be a node id, a port name or a group name."""
    return isinstance(text, str) and ID_PATTERN.fullmatch(text) is not None


class GraphError(ValueError):
    """A primitive edit is not possible; the message says why."""


@dataclass(frozen=True, order=True)
class PortRef:
    node: str
    port: str

    @classmethod
    def parse(cls, text: str) -> PortRef:
        if not isinstance(text, str) or "." not in text:
            raise GraphError(f"port reference {text!r} must look like 'node.port'")
        node, _, port = text.rpartition(".")
        if not node or not port:
            raise GraphError(f"port reference {text!r} must look like 'node.port'")
        return cls(node, port)

    def __str__(self) -> str:
        return f"{self.node}.{self.port}"


@dataclass(frozen=True, order=True)
class Edge:
    src: PortRef
    dst: PortRef

    def to_json(self) -> list[str]:
        return [str(self.src), str(self.dst)]

    def __str__(self) -> str:
        return f"{self.src} -> {self.dst}"


@dataclass
class Node:
    id: str
    type: str
    params: dict[str, Any] = field(default_factory=dict)  # explicitly set values only
    pos: tuple[float, float] = (0.0, 0.0)

    def copy(self) -> Node:
        """An independent copy (list/dict param values are copied too)."""
        params = {k: copy_value(v) for k, v in self.params.items()}
        return Node(self.id, self.type, params, (self.pos[0], self.pos[1]))


_ATOMS = (str, int, float, bool, type(None))


def copy_value(value: Any) -> Any:
    """``value`` itself when it is an atom, else a deep copy (a param's list, a training section)."""
    if isinstance(value, _ATOMS):
        return value
    import copy

    return copy.deepcopy(value)


def reachable(roots: Iterable[str], step: Mapping[str, Iterable[str]]) -> set[str]:
    """``roots`` and every name reached from them by following ``step`` (name -> its neighbours)."""
    seen = set(roots)
    stack = list(seen)
    while stack:
        for m in step.get(stack.pop(), ()):
            if m not in seen:
                seen.add(m)
                stack.append(m)
    return seen
