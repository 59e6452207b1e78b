"""Migrations of project documents, one tested function per version step.

``MIGRATIONS[v]`` takes a parsed version-``v`` document (a dict) and returns a
version ``v + 1`` one; the loader applies them in turn up to
``CURRENT_VERSION``, then validates the result. A migration converts only what
has the old form and leaves anything else as it is, so the validator can
report malformed input in the current terms.

Version 0 is the pre-release draft format, identical to version 1 except that

* an edge was an object ``{"from": "a.out", "to": "b.in"}`` (now ``["a.out", "b.in"]``);
* a position was an object ``{"x": 10, "y": 20}`` (now ``[10, 20]``);

in the project and in group bodies alike.

To change the format: bump ``CURRENT_VERSION``, add ``migrate_<old>_to_<new>``
to ``MIGRATIONS`` and a test that loads a file of the old version.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

CURRENT_VERSION = 1


def _v0_graph_to_v1(part: Any) -> Any:
    """Edges and positions of one graph (project or body) from draft form to v1."""
    if not isinstance(part, dict):
        return part
    part = dict(part)
    nodes = part.get("nodes")
    if isinstance(nodes, list):
        new_nodes = []
        for node in nodes:
            if isinstance(node, dict) and isinstance(node.get("pos"), dict):
                pos = node["pos"]
                if set(pos) == {"x", "y"}:
                    node = {**node, "pos": [pos["x"], pos["y"]]}
            new_nodes.append(node)
        part["nodes"] = new_nodes
    edges = part.get("edges")
    if isinstance(edges, list):
        part["edges"] = [
            [e["from"], e["to"]] if isinstance(e, dict) and set(e) == {"from", "to"} else e for e in edges
        ]
    return part


def migrate_0_to_1(doc: dict[str, Any]) -> dict[str, Any]:
    """Draft format -> version 1: edges become ``[src, dst]``, positions ``[x, y]``."""
    out: dict[str, Any] = _v0_graph_to_v1(doc)
    groups = out.get("groups")
    if isinstance(groups, dict):
        out["groups"] = {name: _v0_graph_to_v1(body) for name, body in groups.items()}
    out["version"] = 1
    return out


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: migrate_0_to_1}
