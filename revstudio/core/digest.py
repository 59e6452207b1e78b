"""The network digest: one short name for "the same network", whatever file it was read from.

A run records it (its ``started`` row, ``status.json``) so that a reader of the run folder, or of a
paper's, can tell which network was trained: two files that differ only in what does not change
the network (node positions, the order of nodes and edges, the project's name, the view, the run
settings, a parameter written out at its default value) have the same digest; any change to a
node's type or parameters, an edge, a node id or a group body gives another. The run settings are
the run's ``config.json`` and the data have their own digest (``training.data_checks.data_digest``).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from .graph import Graph
from .project_write import dumps

SHORT = 12  # hex digits shown in a table (the whole digest is in the files)


def _body(doc: dict[str, Any]) -> dict[str, Any]:
    from .spec import registry

    nodes = []
    for node in doc.get("nodes", []):
        spec = registry.find(node.get("type", ""))
        params = {**(spec.defaults() if spec else {}), **(node.get("params") or {})}
        rest = {k: v for k, v in node.items() if k not in ("pos", "params")}
        nodes.append({**rest, "params": params})
    return {"nodes": sorted(nodes, key=lambda n: str(n.get("id"))),
            "edges": sorted(list(map(str, edge)) for edge in doc.get("edges", []))}


def network_digest(graph: Graph) -> str:
    """``sha256:<hex>`` of the network ``graph`` draws (see the module docstring for what counts)."""
    doc = json.loads(dumps(graph))
    canon = {"network": _body(doc),
             "groups": {name: _body(body) for name, body in sorted((doc.get("groups") or {}).items())}}
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def short(digest: Any) -> str:
    """A digest as a table shows it: its kind and first hex digits (``sha256:3f2a9c01b7e4``); "-" for none."""
    if not isinstance(digest, str) or not digest:
        return "-"
    kind, _, hexes = digest.rpartition(":")
    return f"{kind}:{hexes[:SHORT]}" if kind else hexes[:SHORT]
