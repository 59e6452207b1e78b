"""How the estimate reads a graph: values, the storage each lives in, what each node keeps.

``_Walker`` applies the save rules (``save_rules``) to one graph (the project or a
group body), resolves views to the tensor they view and fuses the Concat/Split
pairs the runtime fuses; ``_Bodies`` summarises group bodies as single steps.
The helpers below find what regions and checkpoint segments keep. Torch-free.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from revstudio.core.graph import Graph, PortRef

from .save_rules import VIEW_TYPES, BodySaves, NodeView, rule_for

Value = tuple[str, str]  # (node id, output port); ("", port) = a group input


_DEFAULTS: dict[str, dict[str, Any]] = {}


def _params(graph: Graph, nid: str) -> dict[str, Any]:
    """A node's params with the spec's defaults (cached per type: this runs per node per edit)."""
    node = graph.nodes[nid]
    defaults = _DEFAULTS.get(node.type)
    if defaults is None:
        from revstudio.core.spec import registry

        spec = registry.find(node.type)
        defaults = _DEFAULTS[node.type] = spec.defaults() if spec is not None else {}
    return {**defaults, **node.params}


class _Walker:
    """Applies the save rules to one graph (the project or a group body)."""

    def __init__(self, graph: Graph, report: Any, batch: int, elem: int, bodies: _Bodies) -> None:
        self.graph = graph
        self.report = report
        self.batch = batch
        self.elem = elem
        self.bodies = bodies
        self.source: dict[tuple[str, str], PortRef] = {}
        for e in graph.edges:
            self.source[(e.dst.node, e.dst.port)] = e.src
        self.readers: dict[tuple[str, str], int] = {}
        for e in graph.edges:
            key = (e.src.node, e.src.port)
            self.readers[key] = self.readers.get(key, 0) + 1
        # node -> region id, and the values regions keep (set by ``estimate``)
        self.region_of: dict[str, str] = {}
        self.region_kept: set[tuple[str, str]] = set()
        self.views: dict[str, NodeView] = {}
        self.saves: dict[str, Any] = {}
        for nid in report.order:
            info = report.nodes.get(nid)
            if info is None or not info.ok or nid not in graph.nodes:
                continue
            params = _params(graph, nid)
            view = NodeView(info.type, params, dict(info.inputs), dict(info.outputs), batch, elem,
                            bodies.for_node(info.type, params))
            self.views[nid] = view
            try:
                self.saves[nid] = rule_for(info.type)(view)
            except (TypeError, ValueError, KeyError):  # odd params: keep the inputs, be honest
                self.saves[nid] = rule_for("?")(view)

    # -- values ---------------------------------------------------------
    def base(self, value: Value) -> Value | None:
        """The value whose storage ``value`` lives in; None if the caller owns it."""
        cache = self.__dict__.setdefault("_base_cache", {})
        if value in cache:
            return cache[value]
        found = cache[value] = self._base(value)
        return found

    def _base(self, value: Value) -> Value | None:
        seen = 0
        while seen < 10_000:
            seen += 1
            nid, port = value
            info = self.report.nodes.get(nid)
            kind = info.type if info is not None else None
            if kind == "Input":
                return None
            if kind == "GroupInput":
                return ("", str(_params(self.graph, nid).get("port", "in")))
            if kind == "Split":
                fused = self._fused_split(nid, port)
                if fused is not None:
                    value = fused
                    continue
            if kind in VIEW_TYPES:
                src = self.source.get((nid, "in"))
                if src is None:
                    return None
                value = (src.node, src.port)
                continue
            return value
        return None  # pragma: no cover - a cycle; the check already reports it

    def _fused_split(self, nid: str, port: str) -> Value | None:
        """Inside a region the runtime fuses a Concat undone by a matching Split away
        (no copy): the Split's outputs are then the Concat's inputs themselves."""
        src = self.source.get((nid, "in"))
        rid = self.region_of.get(nid)
        if src is None or rid is None or self.region_of.get(src.node) != rid:
            return None
        cat = self.report.nodes.get(src.node)
        split = self.report.nodes.get(nid)
        if cat is None or split is None or cat.type != "Concat":
            return None
        if self.readers.get((src.node, src.port), 0) != 1 or (src.node, src.port) in self.region_kept:
            return None
        parts = list(cat.inputs.values())
        if parts != list(split.outputs.values()) or port not in split.outputs:
            return None
        index = list(split.outputs).index(port)
        feed = self.source.get((src.node, list(cat.inputs)[index]))
        return None if feed is None else (feed.node, feed.port)

    def input_value(self, nid: str, port: str) -> Value | None:
        src = self.source.get((nid, port))
        return None if src is None else self.base((src.node, src.port))

    def nbytes(self, value: Value) -> int:
        cache = self.__dict__.setdefault("_nbytes_cache", {})
        if value in cache:
            return cache[value]
        cache[value] = found = self._nbytes(value)
        return found

    def _nbytes(self, value: Value) -> int:
        nid, port = value
        info = self.report.nodes.get(nid)
        if info is None:
            return 0
        shape = info.outputs.get(port)
        return 0 if shape is None else self.batch * _prod(shape) * self.elem

    # -- one mode -------------------------------------------------------
    def kept(self, skip: set[str], forced: Iterable[Value | None]) -> tuple[set[Value], dict[str, int]]:
        """Kept values and extra bytes per node when the nodes in ``skip``
        keep nothing themselves and ``forced`` values are kept anyway."""
        values: set[Value] = {v for v in forced if v is not None}
        extra: dict[str, int] = {}
        for nid, saves in self.saves.items():
            if nid in skip:
                continue
            for port in saves.inputs:
                v = self.input_value(nid, port)
                if v is not None:
                    values.add(v)
            for port in saves.outputs:
                v = self.base((nid, port))
                if v is not None:
                    values.add(v)
            if saves.extra_bytes:
                extra[nid] = saves.extra_bytes
        return values, extra

    def per_node(self, values: set[Value], extra: Mapping[str, int],
                 wide: Iterable[Value | None] = (), wide_bytes: int = 0) -> dict[str, int]:
        """Bytes per producing node; ``wide`` values are kept at ``wide_bytes`` per element."""
        wide_set = {v for v in wide if v is not None}
        out = {nid: extra.get(nid, 0) for nid in self.report.nodes}
        for v in values:
            if v[0] in out:
                n = self.nbytes(v)
                out[v[0]] += n * wide_bytes // self.elem if v in wide_set and wide_bytes else n
        return out


def _prod(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


class _Bodies:
    """Summaries of group bodies as single steps, memoised and recursion-safe."""

    def __init__(self, graph: Graph, report: Any, batch: int, elem: int) -> None:
        self.graph = graph
        self.reports: Mapping[str, Any] = getattr(report, "groups", {}) or {}
        self.batch = batch
        self.elem = elem
        self.cache: dict[str, BodySaves | None] = {}
        self.active: set[str] = set()

    def for_node(self, type_id: str, params: Mapping[str, Any]) -> dict[str, BodySaves]:
        out = {}
        for key in ("group", "f", "g", "net"):
            name = params.get(key)
            if isinstance(name, str) and name:
                body = self.summary(name)
                if body is not None:
                    out[key] = body
        return out

    def summary(self, name: str) -> BodySaves | None:
        if name in self.cache:
            return self.cache[name]
        body_graph = self.graph.groups.get(name)
        body_report = self.reports.get(name)
        if body_graph is None or body_report is None or name in self.active:
            return None
        self.active.add(name)
        try:
            walker = _Walker(body_graph, body_report, self.batch, self.elem, self)
            values, extra = walker.kept(set(), ())
            inputs = tuple(sorted(port for nid, port in values if nid == ""))
            internal = sum(walker.nbytes(v) for v in values if v[0]) + sum(extra.values())
            in_bytes: dict[str, int] = {}
            out_bytes: dict[str, int] = {}
            for nid, info in body_report.nodes.items():
                params = _params(body_graph, nid) if nid in body_graph.nodes else {}
                if info.type == "GroupInput":
                    shape = next(iter(info.outputs.values()), None)
                    in_bytes[str(params.get("port", "in"))] = self._bytes(shape)
                elif info.type == "GroupOutput":
                    out_bytes[str(params.get("port", "out"))] = self._bytes(info.inputs.get("in"))
            steps = [sv for nid, sv in walker.saves.items()
                     if body_report.nodes[nid].type not in ("GroupInput", "GroupOutput")]
            part = steps[0].input_part_bytes if len(steps) == 1 else 0
            result: BodySaves | None = BodySaves(inputs, (), internal, in_bytes, out_bytes, part)
        finally:
            self.active.discard(name)
        self.cache[name] = result
        return result

    def _bytes(self, shape: Sequence[int] | None) -> int:
        return 0 if shape is None else self.batch * _prod(shape) * self.elem


def _region_parts(region: Any) -> tuple[str, set[str], list[str], list[str]]:
    """(id, nodes, inputs, kept values) of a region. Besides its outputs a region
    keeps its "side" inputs: values only a coupling function reads, which the
    backward pass needs but cannot rebuild."""
    rid = str(getattr(region, "id", ""))
    kept = list(getattr(region, "outputs", ())) + list(getattr(region, "side", ()) or ())
    return rid, set(getattr(region, "nodes", ())), list(getattr(region, "inputs", ())), kept


def _values_of(walker: _Walker, refs: Iterable[str]) -> list[Value | None]:
    out: list[Value | None] = []
    for ref in refs:
        try:
            p = PortRef.parse(ref)
        except ValueError:
            continue
        info = walker.report.nodes.get(p.node)
        if info is not None and p.port in info.outputs:
            out.append(walker.base((p.node, p.port)))
        else:  # an input port reference: the value feeding it
            out.append(walker.input_value(p.node, p.port))
    return out


def _region_segment_nodes(walker: _Walker, region: Any) -> tuple[dict[str, int], list[list[str]]]:
    """(node -> segment, nodes per segment) of a region in checkpoint mode
    (``compiler.checkpointing``: about sqrt(N) segments of its N computing steps)."""
    from revstudio.compiler.checkpointing import region_segments, step_weight

    steps = list(getattr(region, "steps", ()) or ())
    couplings = getattr(region, "couplings", {}) or {}
    step_of: dict[str, int] = {}
    for i, nid in enumerate(steps):
        step_of[nid] = i
        coupling = couplings.get(nid)
        for body in getattr(coupling, "body", ()) or ():
            step_of.setdefault(body, i)
    types = [walker.report.nodes[n].type if n in walker.report.nodes else "?" for n in steps]
    segment_of: dict[int, int] = {}
    bounds = region_segments([step_weight(t) for t in types])
    for k, (start, end) in enumerate(bounds):
        for i in range(start, end):
            segment_of[i] = k
    where = {nid: segment_of.get(i, 0) for nid, i in step_of.items()}
    members: list[list[str]] = [[] for _ in bounds] or [[]]
    for nid in getattr(region, "nodes", ()):
        if nid in where and nid in walker.report.nodes:
            members[where[nid]].append(nid)
    return where, members


def _region_segment_inputs(walker: _Walker, region: Any) -> list[Value | None]:
    """Values checkpoint mode keeps for a region: the inputs of each of its segments."""
    where, _ = _region_segment_nodes(walker, region)
    kept: list[Value | None] = []
    for nid in getattr(region, "nodes", ()):
        info = walker.report.nodes.get(nid)
        if info is None or nid not in where:
            continue
        for port in info.inputs:
            src = walker.source.get((nid, port))
            if src is None or where.get(src.node, -1) == where[nid]:
                continue
            kept.append(walker.base((src.node, src.port)))
    return kept


def _checkpoint_segments(walker: _Walker, order: Sequence[str], region_of: Mapping[str, str],
                         runs: list[list[str]] | None = None) -> tuple[set[str], list[Value | None]]:
    """(nodes, kept inputs) of the runs of ordinary nodes checkpoint mode recomputes.

    Mirrors the compiler: in execution order, each region is one op and every
    run of two or more consecutive ordinary ops is one torch.utils.checkpoint
    segment, which keeps its inputs instead of what happens inside.
    """
    items: list[tuple[str, str]] = []
    for nid in order:
        info = walker.report.nodes.get(nid)
        if info is None or info.type in ("Input", "Output"):
            continue
        rid = region_of.get(nid)
        item = ("region", rid) if rid is not None else ("node", nid)
        if rid is None or not items or items[-1] != item:
            items.append(item)
    nodes: set[str] = set()
    kept: list[Value | None] = []
    run: list[str] = []
    for kind, name in [*items, ("end", "")]:
        if kind == "node":
            run.append(name)
            continue
        if len(run) >= 2:
            if runs is not None:
                runs.append(list(run))
            inside = set(run)
            nodes |= inside
            for nid in run:
                for port in walker.report.nodes[nid].inputs:
                    src = walker.source.get((nid, port))
                    if src is not None and src.node not in inside:
                        kept.append(walker.base((src.node, src.port)))
        run = []
    return nodes, kept
