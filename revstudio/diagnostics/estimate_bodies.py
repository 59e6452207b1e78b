"""Group bodies as the estimate sees them: each body summarised as one step.

``_Bodies`` walks a body (a Group's, a Repeat's, a coupling's F, G or net) with its own
``estimate_walk._Walker`` and keeps what it keeps, reads and hands on, memoised per body and
safe against a body that holds itself; the helpers find a body's head Split and tail Concat,
which a region running the body spliced fuses with its neighbours. Torch-free.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from revstudio.core.graph import Graph

from .coupling_ends import coupling_head, coupling_tail
from .estimate_walk import Value, _params, _prod, _Walker
from .save_rules import BodySaves


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
    """A body's one kept input that only a Split (or an AdditiveCoupling, which splits it) reads,
    with which of the Split's parts the body keeps (each kept directly by a layer); None where
    the body keeps it any other way."""
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
    if cut is not None and info is not None and info.type == "AdditiveCoupling":  # it splits its input itself
        return coupling_head(walker.views.get(cut), walker.saves.get(cut), kept_inputs[0])
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
    """A body's one output that a Concat (or a coupling, which ends in one) alone feeds (read by
    nothing else), with which of the Concat's parts the body keeps anyway; None otherwise."""
    report = walker.report
    outs = [nid for nid, info in report.nodes.items() if info.type == "GroupOutput" and nid in graph.nodes]
    if len(outs) != 1:
        return None
    src = walker.source.get((outs[0], "in"))
    if src is None:
        return None
    info = report.nodes.get(src.node)
    if info is None or walker.readers.get((src.node, src.port), 0) != 1:
        return None
    if info.type != "Concat":  # a coupling ends in one of its own
        return coupling_tail(walker.views.get(src.node), _group_port(graph, outs[0], "out"))
    parts = [walker.input_value(src.node, p) for p in info.inputs]
    return (_group_port(graph, outs[0], "out"), tuple(tuple(s) for s in info.inputs.values()),
            tuple(v is not None and v in kept for v in parts))
