"""The graph as the reversibility analysis walks it: values, their producer and readers.

``View`` indexes one graph once per analysis (topological order of the nodes
that checked clean, who produces and who reads each value); ``reaches`` and
``reentering`` are the two path questions the analysis asks of it. Torch-free.
"""
from __future__ import annotations

from typing import Any

from revstudio.core.graph import Graph
from revstudio.core.params import validate_all
from revstudio.core.spec import NodeSpec, registry


class View:
    """Indexes of one graph: who produces and who reads each value."""

    def __init__(self, graph: Graph, report: Any) -> None:
        self.graph = graph
        infos = getattr(report, "nodes", {}) or {}
        base = [n for n in getattr(report, "order", []) if n in graph.nodes] or list(graph.nodes)
        self.order = [n for n in base if _ok(infos.get(n))]
        self.index = {n: i for i, n in enumerate(self.order)}
        self.specs: dict[str, NodeSpec | None] = {n: registry.find(graph.nodes[n].type) for n in self.order}
        self.params: dict[str, dict[str, Any]] = {}
        # a node's validated params and ports follow from its type and params alone (the graph's
        # groups are fixed here): worked out once per distinct (type, params), not per node
        known: dict[tuple[str, str], tuple[dict[str, Any], tuple[tuple[str, ...], tuple[str, ...]]]] = {}
        ports: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        for n in self.order:
            spec, node = self.specs[n], graph.nodes[n]
            if spec is None:  # (an unknown type's ports are its wires': the node's own)
                self.params[n], ports[n] = {}, graph.ports(n)
                continue
            key = (node.type, repr(node.params))
            found = known.get(key)
            if found is None:
                found = known[key] = validate_all(dict(spec.params), dict(node.params))[0], graph.ports(n)
            self.params[n], ports[n] = dict(found[0]), found[1]
        self.src: dict[tuple[str, str], str] = {}              # (node, in port) -> value
        self.readers: dict[str, list[tuple[str, str]]] = {}   # value -> [(node, in port)]
        self.inputs: dict[str, list[str]] = {n: [] for n in self.order}  # node -> values read, port order
        for e in graph.edges:
            if e.src.node in self.index and e.dst.node in self.index:
                value = str(e.src)
                self.src[(e.dst.node, e.dst.port)] = value
                self.readers.setdefault(value, []).append((e.dst.node, e.dst.port))
        self.outputs: dict[str, list[str]] = {}
        for n in self.order:
            ins, outs = ports[n]
            self.inputs[n] = [self.src[(n, p)] for p in ins if (n, p) in self.src]
            self.outputs[n] = [f"{n}.{p}" for p in outs]

    def type(self, n: str) -> str:
        spec = self.specs[n]
        return spec.type_id if spec else self.graph.nodes[n].type

    def producer(self, value: str) -> str:
        return value.rpartition(".")[0]

    def successors(self) -> dict[str, list[str]]:
        """node -> nodes reading any of its outputs (built once per analysis)."""
        succ = getattr(self, "_succ", None)
        if succ is None:
            succ = {}
            for (node, _port), value in self.src.items():
                succ.setdefault(self.producer(value), []).append(node)
            self._succ = succ
        return succ


def _ok(info: Any) -> bool:
    return info is not None and bool(getattr(info, "ok", True))


def port_of(v: View, node: str, value: str) -> str:
    return next((port for n, port in v.readers.get(value, []) if n == node), "")


def reaches(v: View, src: str, dst: str) -> bool:
    """Is there a path src -> ... -> dst? (Searches up from dst, never below src's position.)"""
    if v.index[src] >= v.index[dst]:
        return src == dst
    floor = v.index[src]
    stack, seen = [dst], {dst}
    while stack:
        n = stack.pop()
        for value in v.inputs.get(n, []):
            p = v.producer(value)
            if p == src:
                return True
            if p not in seen and v.index.get(p, -1) > floor:
                seen.add(p)
                stack.append(p)
    return False


def reentering(v: View, nodes: set[str]) -> set[str]:
    """Members reachable from the set through an outside node (they break atomic execution)."""
    succ = v.successors()
    # In topological order a path that comes back into the set never passes a node
    # placed after the set's last member, so the walk stops there (keeps it local).
    last = max((v.index[n] for n in nodes), default=-1)
    frontier = [s for n in nodes for s in succ.get(n, []) if s not in nodes and v.index[s] < last]
    seen: set[str] = set()
    hit: set[str] = set()
    while frontier:
        n = frontier.pop()
        if n in seen:
            continue
        seen.add(n)
        for s in succ.get(n, []):
            if s in nodes:
                hit.add(s)
            elif v.index[s] < last:
                frontier.append(s)
    # everything downstream of a re-entry point inside the set also has to move
    stack = list(hit)
    while stack:
        n = stack.pop()
        for s in succ.get(n, []):
            if s in nodes and s not in hit:
                hit.add(s)
                stack.append(s)
    return hit
