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

from .peak import Unit, UnitBuilder, Walk
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
    # the simulated training step per mode (``peak``), computed when first asked for
    _peaks_of: Any = field(default=None, repr=False)

    @property
    def peaks(self) -> dict[str, Walk]:
        """The simulated step per mode: its peak, where it happens, what forward keeps."""
        found = self.__dict__.get("_peaks")
        if found is None:
            found = self.__dict__["_peaks"] = self._peaks_of() if self._peaks_of is not None else {}
        return found

    def peak_bytes(self, mode: str) -> int:
        """Estimated peak of one training step in ``mode`` (excluding weights and the input batch)."""
        walk = self.peaks.get(mode)
        return walk.peak if walk is not None else self.activation_bytes(mode) + self.parameter_bytes()

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
    walker.__dict__.pop("_base_cache", None)  # the fused views depend on the regions
    for _, _, _, kept_refs in parts:
        for ref in kept_refs:
            try:
                p = PortRef.parse(ref)
            except ValueError:
                continue
            walker.region_kept.add((p.node, p.port))
    walker.__dict__.pop("_base_cache", None)
    in_regions = set().union(*(nodes for _, nodes, _, _ in parts)) if parts else set()
    region_outputs = [v for _, _, _, outs in parts for v in _values_of(walker, outs)]
    region_inputs = [v for _, _, ins, _ in parts for v in _values_of(walker, ins)]

    runs: list[list[str]] = []
    seg_nodes, seg_inputs = _checkpoint_segments(walker, list(order or report.order), walker.region_of, runs)
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
    walk_order = list(order or report.order)
    result._peaks_of = lambda: _peaks(walker, walk_order, regions, runs, stream_bytes)
    for rid, nodes, _, _ in parts:
        result.regions[rid] = RegionEstimate(
            standard_bytes=sum(per_mode["standard"].get(n, 0) for n in nodes),
            reversible_bytes=sum(per_mode["reversible"].get(n, 0) for n in nodes),
        )
    return result


def _peaks(walker: _Walker, order: list[str], regions: Sequence[Any], runs: list[list[str]],
           stream_bytes: int) -> dict[str, Walk]:
    """The simulated step per mode (``peak.simulate``)."""
    b = UnitBuilder(walker, order, stream_bytes)
    by_node = {n: r for r in regions for n in getattr(r, "nodes", ())}
    run_of = {n: i for i, run in enumerate(runs) for n in run}
    units: dict[str, list[Unit]] = {m: [] for m in MODES}
    done: set[Any] = set()
    for nid in b.order:
        units["standard"].append(b.node(nid))
        region = by_node.get(nid)
        if region is not None:
            if id(region) not in done:
                done.add(id(region))
                units["reversible"].append(b.region(region))
                for k, members in enumerate(_region_segment_nodes(walker, region)[1]):
                    if members:
                        units["checkpoint"].append(b.segment(f"{getattr(region, 'id', '')}#{k}", members))
            continue
        units["reversible"].append(b.node(nid))
        if nid in run_of:
            if ("run", run_of[nid]) not in done:
                done.add(("run", run_of[nid]))
                run = [n for n in runs[run_of[nid]] if n in walker.views]
                units["checkpoint"].append(b.segment(f"segment {run[0]}..{run[-1]}", run))
            continue
        units["checkpoint"].append(b.node(nid))
    return {mode: b.walk(units[mode]) for mode in MODES}


# Optimizer state per parameter byte, where known: what ``optimizer.step`` keeps between steps.
OPTIMIZER_STATE = {"sgd": 1, "adam": 2, "adamw": 2, None: 0, "none": 0}


def _checked_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    return mode


def _state_bytes(parameter_bytes: int, optimizer: str | None) -> int:
    key = optimizer.lower() if isinstance(optimizer, str) else None
    if key not in OPTIMIZER_STATE:
        raise ValueError(f"optimizer {optimizer!r} is not one of sgd, adam, adamw (or None)")
    return OPTIMIZER_STATE[key] * parameter_bytes


def estimate_peak(graph: Graph, report: Any, *, batch: int, mode: str, dtype: str | None = None,
                  optimizer: str | None = None) -> int:
    """Bytes of the peak of one training step in ``mode`` at ``batch``, from shapes alone.

    What the step allocates on top of the weights and the input batch, as
    ``revstudio memory`` measures it: the activations kept for backward, the
    transient peak of backward (gradient buffers, a region's streams and one
    step rebuilt at a time, a checkpoint segment recomputed) and the parameters'
    gradients; plus, with ``optimizer`` ("sgd" with momentum, "adam", "adamw"),
    the optimizer's state. ``report`` is ``full_check``'s (its regions are used).
    """
    _checked_mode(mode)
    est = estimate(graph, report, getattr(report, "regions", None) or [], batch=batch, dtype=dtype)
    return est.peak_bytes(mode) + _state_bytes(est.parameter_bytes(), optimizer)


def input_bytes(graph: Graph, report: Any, batch: int, dtype: str | None = None) -> int:
    """Bytes of one input batch (every Input node's shape times ``batch``)."""
    elem = DTYPE_BYTES[dtype if dtype in DTYPE_BYTES else input_dtype(graph)]
    total = 0
    for info in report.nodes.values():
        if info.type == "Input":
            for shape in info.outputs.values():
                total += batch * _prod(shape) * elem
    return total


def max_batch_that_fits(graph: Graph, report: Any, budget_bytes: int, *, mode: str, dtype: str | None = None,
                        optimizer: str | None = None, limit: int = 1 << 16) -> int | None:
    """The largest batch whose training step fits in ``budget_bytes`` (None: not even batch 1).

    Counted against the budget: the weights, the input batch and
    :func:`estimate_peak` (with the optimizer's state when given). Peaks grow
    with the batch, so a doubling search then bisection finds it in a few
    dozen estimates; at most ``limit``.
    """
    _checked_mode(mode)

    def cost(b: int) -> int:
        est = estimate(graph, report, getattr(report, "regions", None) or [], batch=b, dtype=dtype)
        params = est.parameter_bytes()
        return (params + input_bytes(graph, report, b, est.dtype) + est.peak_bytes(mode)
                + _state_bytes(params, optimizer))

    if cost(1) > budget_bytes:
        return None
    lo, hi = 1, 2
    while hi <= limit and cost(hi) <= budget_bytes:
        lo, hi = hi, hi * 2
    if hi > limit:
        return limit if cost(limit) <= budget_bytes else _bisect(cost, lo, limit, budget_bytes)
    return _bisect(cost, lo, hi, budget_bytes)


def _bisect(cost: Any, lo: int, hi: int, budget: int) -> int:
    """Largest b in [lo, hi) with cost(b) <= budget, given cost(lo) fits and cost(hi) does not."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cost(mid) <= budget:
            lo = mid
        else:
            hi = mid
    return lo
