"""Static memory estimate from shapes alone, per node and per execution mode.

For each mode ("standard", "reversible", "checkpoint") it counts parameter
bytes and the activation bytes kept for backward: in standard mode what
autograd saves for each node type (``save_rules``); inside a reversible region
only the region's outputs; inside a checkpointed segment only its inputs.
Each kept tensor is counted once, views resolve to the tensor they view, and
tensors the caller owns (the inputs) are excluded, as the measurement does.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from revstudio.core.graph import Graph, PortRef

from .save_rules import VIEW_TYPES, BodySaves, NodeView, rule_for

MODES = ("standard", "reversible", "checkpoint")

DTYPE_BYTES = {
    "float16": 2, "half": 2, "bfloat16": 2, "float32": 4, "float": 4, "float64": 8, "double": 8,
}

Value = tuple[str, str]  # (node id, output port); ("", port) = a group input


@dataclass
class NodeEstimate:
    """One node: its parameter bytes and the activation bytes it accounts for per mode."""

    type: str
    parameter_bytes: int
    activation_bytes: dict[str, int]
    approximate: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "parameter_bytes": self.parameter_bytes,
            "activation_bytes": dict(self.activation_bytes),
        }
        if self.approximate:
            out["approximate"] = True
        return out


@dataclass
class RegionEstimate:
    """Activation bytes a reversible region keeps in standard vs reversible mode."""

    standard_bytes: int
    reversible_bytes: int

    @property
    def saved_bytes(self) -> int:
        return max(0, self.standard_bytes - self.reversible_bytes)

    def to_json(self) -> dict[str, int]:
        return {
            "standard_bytes": self.standard_bytes,
            "reversible_bytes": self.reversible_bytes,
            "saved_bytes": self.saved_bytes,
        }


@dataclass
class MemoryEstimate:
    """The whole estimate; ``to_json()`` is the ``"estimate"`` of ``check --json``."""

    batch: int
    dtype: str
    element_bytes: int
    nodes: dict[str, NodeEstimate] = field(default_factory=dict)
    regions: dict[str, RegionEstimate] = field(default_factory=dict)

    def parameter_bytes(self) -> int:
        return sum(n.parameter_bytes for n in self.nodes.values())

    def activation_bytes(self, mode: str) -> int:
        return sum(n.activation_bytes[mode] for n in self.nodes.values())

    def totals(self) -> dict[str, dict[str, int]]:
        params = self.parameter_bytes()
        out = {}
        for mode in MODES:
            act = self.activation_bytes(mode)
            out[mode] = {"parameter_bytes": params, "activation_bytes": act, "total_bytes": params + act}
        return out

    def saved_by_region(self, region_id: str) -> int:
        """Bytes a region saves (the editor labels the region's backdrop with it)."""
        region = self.regions.get(region_id)
        return region.saved_bytes if region else 0

    def summary_lines(self) -> list[str]:
        """Human lines: totals per mode, then what each region saves."""
        lines = [f"batch {self.batch}, {self.dtype}; parameters {fmt_bytes(self.parameter_bytes())}"]
        standard = self.activation_bytes("standard")
        for mode in MODES:
            act = self.activation_bytes(mode)
            ratio = f" ({act / standard:.0%} of standard)" if standard and mode != "standard" else ""
            lines.append(f"{mode:<11} activations kept for backward {fmt_bytes(act)}{ratio}")
        for rid, region in self.regions.items():
            lines.append(f"region {rid} saves {fmt_bytes(region.saved_bytes)} "
                         f"({fmt_bytes(region.standard_bytes)} -> {fmt_bytes(region.reversible_bytes)})")
        if any(n.approximate for n in self.nodes.values()):
            rough = ", ".join(nid for nid, n in self.nodes.items() if n.approximate)
            lines.append(f"approximate for: {rough}")
        return lines

    def to_json(self) -> dict[str, Any]:
        # The editor reads per-node facts from this object after every edit;
        # build it once (an estimate is a snapshot: nothing changes it later).
        cached = self.__dict__.get("_json")
        if cached is None:
            cached = self.__dict__["_json"] = self._build_json()
        return cached

    def _build_json(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "dtype": self.dtype,
            "modes": self.totals(),
            "nodes": {nid: n.to_json() for nid, n in self.nodes.items()},
            "regions": {rid: r.to_json() for rid, r in self.regions.items()},
        }


def fmt_bytes(n: float) -> str:
    """1.5 MiB: short binary units for labels and tables (the CLI's and the editor's)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover


def input_dtype(graph: Graph) -> str:
    """The floating dtype of the first Input node that declares one (float32 by default)."""
    for node in graph:
        if node.type == "Input":
            name = str(graph.resolved_params(node.id).get("dtype", "float32") or "float32")
            if name in DTYPE_BYTES:
                return name
    return "float32"


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


def _region_segment_inputs(walker: _Walker, region: Any) -> list[Value | None]:
    """Values checkpoint mode keeps for a region: the inputs of each of its segments
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
    for k, (start, end) in enumerate(region_segments([step_weight(t) for t in types])):
        for i in range(start, end):
            segment_of[i] = k
    kept: list[Value | None] = []
    for nid in getattr(region, "nodes", ()):
        info = walker.report.nodes.get(nid)
        if info is None or nid not in step_of:
            continue
        mine = segment_of.get(step_of[nid], 0)
        for port in info.inputs:
            src = walker.source.get((nid, port))
            if src is None:
                continue
            if src.node in step_of and segment_of.get(step_of[src.node], 0) == mine:
                continue
            kept.append(walker.base((src.node, src.port)))
    return kept


def _checkpoint_segments(walker: _Walker, order: Sequence[str], region_of: Mapping[str, str]
                         ) -> tuple[set[str], list[Value | None]]:
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
            inside = set(run)
            nodes |= inside
            for nid in run:
                for port in walker.report.nodes[nid].inputs:
                    src = walker.source.get((nid, port))
                    if src is not None and src.node not in inside:
                        kept.append(walker.base((src.node, src.port)))
        run = []
    return nodes, kept


def estimate(
    graph: Graph,
    report: Any,
    regions: Sequence[Any] | None = None,
    batch: int = 1,
    dtype: str | None = None,
    stream_dtype: str | None = None,
    order: Sequence[str] | None = None,
) -> MemoryEstimate:
    """Per-node, per-mode memory estimate of ``graph`` from the shapes in ``report``.

    ``regions`` defaults to ``report.regions``; each needs ``id``, ``nodes``,
    ``inputs`` and ``outputs`` ("node.port" strings). ``stream_dtype`` is the
    dtype regions keep their streams in (default: 8 bytes per value, what the
    compiler's float32 pairs and float64 streams take). Nodes without inferred shapes contribute
    nothing. ``order`` is the execution order (the regions analysis's; the
    check's topological order by default): it decides which ordinary nodes
    checkpoint mode groups into segments. Never raises on a checked graph.
    """
    dtype = dtype if dtype in DTYPE_BYTES else input_dtype(graph)
    elem = DTYPE_BYTES[dtype]
    # a compensated float32 pair ("float32x2", the compiler's choice for float32 models)
    # takes the 8 bytes of a float64 value
    stream_bytes = DTYPE_BYTES.get(stream_dtype or "float64", 8)
    batch = max(1, int(batch))
    regions = list(report.regions if regions is None else regions)
    walker = _Walker(graph, report, batch, elem, _Bodies(graph, report, batch, elem))

    parts = [_region_parts(r) for r in regions]
    walker.region_of = {n: rid for rid, nodes, _, _ in parts for n in nodes}
    for _, _, _, kept_refs in parts:
        for ref in kept_refs:
            try:
                p = PortRef.parse(ref)
            except ValueError:
                continue
            walker.region_kept.add((p.node, p.port))
    in_regions = set().union(*(nodes for _, nodes, _, _ in parts)) if parts else set()
    region_outputs = [v for _, _, _, outs in parts for v in _values_of(walker, outs)]
    region_inputs = [v for _, _, ins, _ in parts for v in _values_of(walker, ins)]

    seg_nodes, seg_inputs = _checkpoint_segments(walker, list(order or report.order), walker.region_of)
    region_inputs += [v for r in regions for v in _region_segment_inputs(walker, r)]

    per_mode = {
        # checkpoint mode recomputes each region, and each run of ordinary nodes,
        # as one torch.utils.checkpoint segment, which keeps only its inputs
        "standard": walker.per_node(*walker.kept(set(), ())),
        # the runtime keeps a region's residual streams wide (float32 pairs or float64)
        # when the model computes in float32 or narrower (so reconstruction error
        # cannot compound): the kept outputs take 8 bytes per value
        "reversible": walker.per_node(*walker.kept(in_regions, region_outputs), wide=region_outputs,
                                      wide_bytes=stream_bytes),
        "checkpoint": walker.per_node(*walker.kept(in_regions | seg_nodes, region_inputs + seg_inputs)),
    }
    result = MemoryEstimate(batch=batch, dtype=dtype, element_bytes=elem)
    for nid, info in report.nodes.items():
        saves = walker.saves.get(nid)
        result.nodes[nid] = NodeEstimate(
            type=info.type,
            parameter_bytes=int(info.parameters) * elem,
            activation_bytes={mode: per_mode[mode].get(nid, 0) for mode in MODES},
            approximate=bool(saves is not None and saves.approximate),
        )
    for rid, nodes, _, _ in parts:
        result.regions[rid] = RegionEstimate(
            standard_bytes=sum(per_mode["standard"].get(n, 0) for n in nodes),
            reversible_bytes=sum(per_mode["reversible"].get(n, 0) for n in nodes),
        )
    return result
