"""Renamed nodes: which layer names a checkpoint saved before a rename still uses.

A node's layer is registered under its id (``plan.module_name``), so renaming a
node renames its ``state_dict`` keys. ``graph.renamed`` (old id -> current id,
kept by ``core.commands.RenameNode``) records the change; a project and each group
body keep their own map, and each compiled executor (the model, every group
body's module, and their exported classes) moves the old keys to the new name
before loading its own weights, so this works at any nesting depth.
"""
from __future__ import annotations

from typing import Any

from revstudio.core.graph import Graph

from .plan import module_name


def layer_aliases(graph: Graph) -> dict[str, str]:
    """{old layer name: current layer name} for ``graph``'s renamed nodes, sorted by old name.

    An alias whose new node is gone, or whose old id names a live node again (a
    node added later under the freed id), is left out: that node's own keys must
    not be moved away from it.
    """
    return {module_name(old): module_name(new) for old, new in sorted(graph.renamed.items())
            if new in graph.nodes and old not in graph.nodes}


def alias_state_keys(state_dict: Any, prefix: str, aliases: dict[str, str]) -> None:
    """Move ``prefix + old + ".*"`` keys to the new layer name (children load after their parent,
    from this very dict); a key already present under the new name wins."""
    for old, new in aliases.items():
        head = f"{prefix}{old}."
        for key in [k for k in state_dict if k.startswith(head)]:
            value = state_dict.pop(key)
            state_dict.setdefault(f"{prefix}{new}.{key[len(head):]}", value)
