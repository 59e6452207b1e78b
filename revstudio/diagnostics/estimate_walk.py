"""How the estimate reads a graph: values, the storage each lives in, what each node keeps.

``_Walker`` applies the save rules (``save_rules``) to one graph (the project or a
group body), resolves views to the tensor they view and fuses the Concat/Split
pairs the runtime fuses; ``_Bodies`` summarises group bodies as single steps.
The helpers below read a region's parts; what checkpoint segments keep is
``estimate_segments``'. Torch-free.
"""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from revstudio.core.graph import Graph, PortRef

from .save_rules import VIEW_TYPES, BodySaves, NodeView, Saves, apply_rule, unjoined_bytes

Value = tuple[str, str]  # (node id, output port); ("", port) = a group input
_UNSET: Any = object()


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


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector while an estimate runs: it makes tens of thousands of
    small tuples and sets and no reference cycles, so collections triggered by those
    allocations would only re-scan the application's objects (about a fifth of the time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Walker:
    """Applies the save rules to one graph (the project or a group body)."""

    def __init__(self, graph: Graph, report: Any, batch: int, elem: int, bodies: _Bodies) -> None:
        self.graph = graph
        self.report = report
        self.batch = batch
        self.elem = elem
        self.bodies = bodies
        self.source: dict[tuple[str, str], PortRef] = {}
        self.readers: dict[tuple[str, str], int] = {}
        source, readers = self.source, self.readers
        for e in graph.edges:
            src = e.src
            source[(e.dst.node, e.dst.port)] = src
            key = (src.node, src.port)
            readers[key] = readers.get(key, 0) + 1
        # node -> region id, and the values regions keep (set by ``estimate``)
        self.region_of: dict[str, str] = {}
        self.region_kept: set[tuple[str, str]] = set()
        self.views: dict[str, NodeView] = {}
        self.saves: dict[str, Any] = {}
        # per value: the storage it lives in, its bytes (asked for thousands of times per estimate)
        self.base_cache: dict[Value, Value | None] = {}
        self.nbytes_cache: dict[Value, int] = {}
        self.segment_cache: dict[int, Any] = {}  # id(region) -> _region_segment_nodes
        self.saved_cache: dict[str, frozenset[Value]] = {}  # node -> the storages it keeps
        # layers autograd does not record: no weights, and no input that needs a gradient (the
        # caller's inputs need none); they keep nothing for backward
        self.untracked: set[str] = set()
        self._rules: dict[tuple[Any, ...], Saves] = {}  # ``_rule``'s
        tracked: dict[Value, bool] = {}
        for nid in report.order:
            info = report.nodes.get(nid)
            if info is None or not info.ok or nid not in graph.nodes:
                continue
            flag = info.type == "GroupInput" or int(info.parameters) > 0 or any(
                tracked.get((src.node, src.port), True) for src in (source.get((nid, port)) for port in info.inputs)
                if src is not None)
            for port in info.outputs:
                tracked[(nid, port)] = flag
            params = _params(graph, nid)
            view = NodeView(info.type, params, info.inputs, info.outputs, batch, elem,
                            bodies.for_node(info.type, params), bodies.device, bodies.dtype)
            self.views[nid] = view
            self.saves[nid] = self._read(nid, self._rule(view)) if flag else Saves()
            if not flag:
                self.untracked.add(nid)

    def _rule(self, view: NodeView) -> Saves:
        """``apply_rule(view)``, worked out once per (type, params, shapes) of a layer with no
        bodies (the batch, element size and device are the walker's): a big graph repeats the same
        layers block after block. Shared between the nodes: ``_read`` copies before it trims."""
        if view.bodies:
            return apply_rule(view)
        try:
            key = (view.type, repr(view.params), tuple(view.inputs.items()), tuple(view.outputs.items()))
            found = self._rules.get(key)
        except TypeError:  # (a shape that is not a tuple)
            return apply_rule(view)
        if found is None:
            found = self._rules[key] = apply_rule(view)
        return found

    # -- values ---------------------------------------------------------
    def base(self, value: Value) -> Value | None:
        """The value whose storage ``value`` lives in; None if the caller owns it."""
        found = self.base_cache.get(value, _UNSET)
        if found is _UNSET:
            found = self.base_cache[value] = self._base(value)
        return found  # type: ignore[return-value]

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
        found = self.nbytes_cache.get(value)
        if found is None:
            found = self.nbytes_cache[value] = self._nbytes(value)
        return found

    def _nbytes(self, value: Value) -> int:
        nid, port = value
        info = self.report.nodes.get(nid)
        if info is None:
            return 0
        shape = info.outputs.get(port)
        return 0 if shape is None else self.batch * _prod(shape) * self.elem

    def define(self, value: Value, nbytes: int) -> None:
        """A value the graph does not name (between the copies of a Repeat) and its bytes."""
        self.nbytes_cache[value] = nbytes
        self.base_cache[value] = value

    def repeat_link_bytes(self, nid: str) -> int:
        """Bytes of the values one copy of a Repeat hands the next (its outputs' shapes)."""
        info = self.report.nodes.get(nid)
        return sum(self.nbytes((nid, p)) for p in info.outputs) if info is not None else 0

    def regions_changed(self) -> None:
        """Forget what depends on the regions (the views fused inside them), and summarise the
        Groups inside a region as the region runs them: spliced (``_Bodies.summary``)."""
        self.base_cache.clear()
        self.saved_cache.clear()
        for nid, view in self.views.items():
            if view.type not in ("Group", "Repeat"):
                continue
            spliced = nid in self.region_of
            bodies = self.bodies.for_node(view.type, view.params, spliced)
            if bodies.get("group") is view.bodies.get("group"):
                continue
            self.views[nid] = view = NodeView(view.type, view.params, view.inputs, view.outputs, view.batch,
                                              view.element_bytes, bodies, view.device, view.dtype)
            self.saves[nid] = Saves() if nid in self.untracked else self._read(nid, apply_rule(view))

    def _read(self, nid: str, saves: Saves) -> Saves:
        """``saves`` without the outputs nothing reads whose backward goes with them, kept by no
        one (``SavedTensors.freed_unread``: a plugin's fork whose unused part was counted kept)."""
        gone = [p for p in saves.freed_unread if not self.readers.get((nid, p))]
        if gone:
            saves = replace(saves, outputs=tuple(p for p in saves.outputs if p not in gone))  # (shared: ``_rule``)
        return saves

    def saved_values(self, nid: str, fuse: bool = True) -> frozenset[Value]:
        """The storages node ``nid`` keeps for backward in standard mode (its save rule's ports).
        ``fuse=False``: a Group's input as the joined value even where the runtime hands on its
        parts (what a region's rebuild reads: the parts are its streams, alive anyway)."""
        key = nid if fuse else "\0" + nid
        found = self.saved_cache.get(key)
        if found is None:
            saves = self.saves.get(nid)
            vals: set[Value] = set()
            if saves is not None:
                for port in saves.inputs:
                    fused = self._fused_group_input(nid, port) if fuse else None
                    if fused is not None:  # the parts it keeps, not the joined value
                        vals.update(fused[0])
                        continue
                    v = self.input_value(nid, port)
                    if v is not None:
                        vals.add(v)
                for port in saves.outputs:
                    v = self.base((nid, port))
                    if v is not None:
                        vals.add(v)
            found = self.saved_cache[key] = frozenset(vals)
        return found

    def extra_bytes(self, nid: str) -> int:
        """Bytes node ``nid`` keeps beyond the values it names: its rule's internal tensors, and
        for a Group reading the parts of a fused Concat inside the group before it, the parts
        that group does not keep itself (they live as long as this one keeps them)."""
        saves = self.saves.get(nid)
        if saves is None:
            return 0
        extra = int(saves.extra_bytes)
        for port in saves.inputs:
            fused = self._fused_group_input(nid, port)
            if fused is not None:
                extra += fused[1]
        return extra

    def _fused_group_input(self, nid: str, port: str) -> tuple[list[Value], int] | None:
        """Where Group ``nid``'s body splits its input ``port`` into the very parts a Concat
        joined just before it in the same region (a Concat node, or one ending the body of the
        Group before it), the runtime hands the parts on without joining them (as
        :meth:`_fused_split` within a graph): (the parts it keeps that are values here, and the
        bytes of the parts it keeps that live inside the group before it, uncounted there).
        None where the input arrives whole."""
        view = self.views.get(nid)
        body = view.bodies.get("group") if view is not None and view.type == "Group" else None
        head = body.head_split if body is not None else None
        src = self.source.get((nid, port))
        rid = self.region_of.get(nid)
        if head is None or head[0] != port or src is None or rid is None or self.region_of.get(src.node) != rid:
            return None
        value = (src.node, src.port)
        if self.readers.get(value, 0) != 1 or value in self.region_kept:
            return None
        _, shapes, kept = head
        producer = self.report.nodes.get(src.node)
        if producer is not None and producer.type == "Concat":
            if tuple(tuple(s) for s in producer.inputs.values()) != shapes:
                return None
            parts = [self.input_value(src.node, p) for p in producer.inputs]
            return [v for v, k in zip(parts, kept) if k and v is not None], 0
        other = self.views.get(src.node)
        before = other.bodies.get("group") if other is not None and other.type == "Group" else None
        tail = before.tail_cat if before is not None else None
        found = unjoined_bytes(head, tail, self.batch, self.elem) if tail is not None and tail[0] == src.port else None
        return None if found is None else ([], found)

    # -- one mode -------------------------------------------------------
    def kept(self, skip: set[str], forced: Iterable[Value | None]) -> tuple[set[Value], dict[str, int]]:
        """Kept values and extra bytes per node when the nodes in ``skip``
        keep nothing themselves and ``forced`` values are kept anyway."""
        values: set[Value] = {v for v in forced if v is not None}
        extra: dict[str, int] = {}
        for nid in self.saves:
            if nid in skip:
                continue
            values |= self.saved_values(nid)
            n = self.extra_bytes(nid)
            if n:
                extra[nid] = n
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

    def __init__(self, graph: Graph, report: Any, batch: int, elem: int, device: str = "cpu",
                 dtype: str = "") -> None:
        self.graph = graph
        self.report = report
        self.reports: Mapping[str, Any] = getattr(report, "groups", {}) or {}
        self.batch = batch
        self.elem = elem
        self.device = device  # the device type the steps run on (``NodeView.device``)
        self.dtype = dtype  # their element type (``NodeView.dtype``)
        self.cache: dict[tuple[str, bool], BodySaves | None] = {}
        self.active: set[str] = set()
        self.analyses: dict[str, Any] = {}

    def regions(self, name: str) -> Any:
        """``compiler.regions.body_regions`` of group body ``name``, analysed once per estimate
        (the walk, the checkpoint segments and the approximate flags all ask)."""
        if name not in self.analyses:
            from revstudio.compiler.regions import body_regions

            self.analyses[name] = body_regions(self.graph, self.report, name)
        return self.analyses[name]

    def steps(self, name: str) -> list[tuple[str, str]] | None:
        """``compiler.regions.body_steps`` of group body ``name`` (from :meth:`regions`)."""
        from revstudio.compiler.regions import steps_of

        return steps_of(self.regions(name))

    def for_node(self, type_id: str, params: Mapping[str, Any], spliced: bool = False) -> dict[str, BodySaves]:
        out = {}
        for key in ("group", "f", "g", "net"):
            name = params.get(key)
            if isinstance(name, str) and name:
                body = self.summary(name, spliced and key == "group")
                if body is not None:
                    out[key] = body
        return out

    def summary(self, name: str, spliced: bool = False) -> BodySaves | None:
        """Group body ``name`` as one step. ``spliced``: as a reversible region runs a Group of
        it, its steps spliced into the region's, where a Concat the next Split undoes is fused
        (as :meth:`_Walker._fused_split` does in a region of the project)."""
        if (name, spliced) in self.cache:
            return self.cache[(name, spliced)]
        body_graph = self.graph.groups.get(name)
        body_report = self.reports.get(name)
        if body_graph is None or body_report is None or name in self.active:
            return None
        self.active.add(name)
        try:
            walker = _Walker(body_graph, body_report, self.batch, self.elem, self)
            if spliced:
                walker.region_of = {nid: "spliced" for nid in body_report.nodes}
                walker.regions_changed()
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
            # (the parts a Concat and the next Split hand on unjoined: only where they are fused)
            result: BodySaves | None = BodySaves(inputs, (), internal, in_bytes, out_bytes, part,
                                                 _head_split(walker, body_graph, inputs) if spliced else None,
                                                 _tail_cat(walker, body_graph, values) if spliced else None)
        finally:
            self.active.discard(name)
        self.cache[(name, spliced)] = result
        return result

    def _bytes(self, shape: Sequence[int] | None) -> int:
        return 0 if shape is None else self.batch * _prod(shape) * self.elem


def _group_port(graph: Graph, nid: str, default: str) -> str:
    return str(_params(graph, nid).get("port", default))


def _head_split(walker: _Walker, graph: Graph, kept_inputs: Sequence[str]
                ) -> tuple[str, tuple[tuple[int, ...], ...], tuple[bool, ...]] | None:
    """A body's one kept input that only a Split reads, with which of the Split's parts the body
    keeps (each kept directly by a layer); None where the body keeps it any other way."""
    if len(kept_inputs) != 1:
        return None
    report = walker.report
    ins = [nid for nid, info in report.nodes.items() if info.type == "GroupInput"
           and nid in graph.nodes and _group_port(graph, nid, "in") == kept_inputs[0]]
    if len(ins) != 1:
        return None
    edges = graph.edges_from(ins[0])
    cut = edges[0].dst.node if len(edges) == 1 else None
    info = report.nodes.get(cut) if cut is not None else None
    if info is None or info.type != "Split":
        return None
    outs = list(info.outputs)
    kept = [False] * len(outs)
    whole = ("", kept_inputs[0])
    for nid, saves in walker.saves.items():
        for port in saves.inputs:
            src = walker.source.get((nid, port))
            if src is not None and src.node == cut:
                kept[outs.index(src.port)] = True
            elif walker.input_value(nid, port) == whole:
                return None  # read whole (or through a view of a part): no parts to hand on
        if any(walker.base((nid, port)) == whole for port in saves.outputs):
            return None
    return kept_inputs[0], tuple(tuple(info.outputs[o]) for o in outs), tuple(kept)


def _tail_cat(walker: _Walker, graph: Graph, kept: AbstractSet[Value]
              ) -> tuple[str, tuple[tuple[int, ...], ...], tuple[bool, ...]] | None:
    """A body's one output that a Concat alone feeds (read by nothing else), with which of the
    Concat's parts the body keeps anyway; None otherwise."""
    report = walker.report
    outs = [nid for nid, info in report.nodes.items() if info.type == "GroupOutput" and nid in graph.nodes]
    if len(outs) != 1:
        return None
    src = walker.source.get((outs[0], "in"))
    if src is None:
        return None
    info = report.nodes.get(src.node)
    if info is None or info.type != "Concat" or walker.readers.get((src.node, src.port), 0) != 1:
        return None
    parts = [walker.input_value(src.node, p) for p in info.inputs]
    return (_group_port(graph, outs[0], "out"), tuple(tuple(s) for s in info.inputs.values()),
            tuple(v is not None and v in kept for v in parts))


def _region_parts(region: Any) -> tuple[str, set[str], list[str], list[str]]:
    """(id, nodes, inputs, kept values) of a region. Besides its outputs a region
    keeps its "side" inputs: values only a coupling function reads, which the
    backward pass needs but cannot rebuild."""
    rid = str(getattr(region, "id", ""))
    kept = list(getattr(region, "outputs", ())) + list(getattr(region, "side", ()) or ())
    return rid, set(getattr(region, "nodes", ())), list(getattr(region, "inputs", ())), kept


def _values_of(walker: _Walker, refs: Iterable[str], *, raw: bool = False) -> list[Value | None]:
    """The values ``refs`` name (an output port, or an input port's source), as the storages they
    are (``walker.base``), or ``raw``: as named, for a namespace that resolves views of its own
    (``peak_inline.Inline``, where a Split's outputs are the parts a coupling node hands on)."""
    out: list[Value | None] = []
    for ref in refs:
        try:
            p = PortRef.parse(ref)
        except ValueError:
            continue
        info = walker.report.nodes.get(p.node)
        if info is not None and p.port in info.outputs:
            out.append((p.node, p.port) if raw else walker.base((p.node, p.port)))
        elif raw:  # an input port reference: the value feeding it
            src = walker.source.get((p.node, p.port))
            out.append(None if src is None else (src.node, src.port))
        else:
            out.append(walker.input_value(p.node, p.port))
    return out


def group_ports(graph: Any, kind: str, default: str) -> list[str]:
    """The ports of a body's GroupInput (or GroupOutput) nodes, in the body's call order."""
    return [str(_params(graph, n).get("port", default)) for n in graph.nodes if graph.nodes[n].type == kind]
