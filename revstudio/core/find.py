"""Finding node types in a graph, inside the group bodies its nodes run too (torch-free)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# the layers that add a log-determinant: a graph with one is a flow (training task, the
# budget's price of a cut, which hands the log-determinant across)
FLOW_TYPES = ("AffineCoupling", "ActNorm", "InvConv1x1")


def find_type(graph: Any, types: tuple[str, ...]) -> str | None:
    """The first node of one of ``types``, looking into the group bodies nodes use, or None
    (inside a group: ``"node/inner"``)."""
    return find_in(graph, graph.groups, types)


def find_in(nodes: Iterable[Any], groups: Mapping[str, Any], types: tuple[str, ...],
            seen: set[str] | None = None) -> str | None:
    """:func:`find_type` over some ``nodes`` of a graph whose group bodies are ``groups``."""
    seen = set() if seen is None else seen
    for node in nodes:
        if node.type in types:
            return str(node.id)
        for value in node.params.values():
            # a Group / Repeat / coupling names its bodies by group name
            if isinstance(value, str) and value in groups and value not in seen:
                seen.add(value)
                inner = find_in(groups[value], groups, types, seen)
                if inner is not None:
                    return f"{node.id}/{inner}"
    return None
