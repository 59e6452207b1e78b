"""How the estimate reads a graph: values, the storage each lives in, what each node keeps.

``_Walker`` applies the save rules (``save_rules``) to one graph (the project or a
group body), resolves views to the tensor they view and fuses the Concat/Split
pairs the runtime fuses; ``estimate_bodies._Bodies`` summarises group bodies as single steps.
The helpers below read a region's parts; what checkpoint segments keep is
``estimate_segments``'. Torch-free.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from revstudio.core.graph import Graph, PortRef
from revstudio.core.nogc import paused

from .axis_order import copies_input
from .coupling_ends import coupling_head, coupling_tail
from .save_rules import NodeView, Saves, apply_rule, makes_view, unjoined_bytes

if TYPE_CHECKING:
    from .estimate_bodies import _Bodies

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
    allocations would only re-scan the application's objects (about a fifth of the time). The
    editor runs it on a worker thread: :func:`revstudio.core.nogc.paused` counts the pause across
    threads."""
    with paused():
        yield


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
            if flag and info.type == "Linear" and copies_input(self, nid, _params):
                # it flattens a view in another axis order: what it keeps is a copy of its own
                saves = self.saves[nid]
                self.saves[nid] = replace(saves, inputs=tuple(p for p in saves.inputs if p != "in"),
                                          extra_bytes=saves.extra_bytes + view.in_bytes(),
                                          copied_bytes=view.in_bytes())
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
            if makes_view(kind, _params(self.graph, nid) if kind == "Permute" else {}):
                if copies_input(self, nid, _params):  # a reshape of a view in another axis order
                    return value
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

    def unjoined_input(self, nid: str, port: str) -> tuple[list[Value], int] | None:
        """:meth:`_fused_group_input`, for the estimate's facts (who keeps which value)."""
        return self._fused_group_input(nid, port)

    def _fused_group_input(self, nid: str, port: str) -> tuple[list[Value], int] | None:
        """Where Group ``nid``'s body (or coupling ``nid``) splits its input ``port`` into the very
        parts a Concat joined just before it in the same region (a Concat node, or one ending the
        body of the Group before it, or the coupling before it: ``coupling_ends``), the runtime
        hands the parts on without joining them (as :meth:`_fused_split` within a graph): (the parts it keeps that are values here, and the
        bytes of the parts it keeps that live inside the group before it, uncounted there).
        None where the input arrives whole."""
        view = self.views.get(nid)
        body = view.bodies.get("group") if view is not None and view.type == "Group" else None
        head = body.head_split if body is not None else coupling_head(view, self.saves.get(nid))
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
        tail = before.tail_cat if before is not None else coupling_tail(other, src.port)
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
