"""Reversibility analysis: which parts of a graph can run without storing activations.

A *step* is an invertible node (catalog flag, or a Group/Repeat whose body is
invertible) or a *wired coupling*: a Merge add/sub ``y = a +- F(b)`` whose F
sub-graph reads only values that stay available after the merge. Steps joined
by the values they pass form maximal regions; the backward pass rebuilds each
step's inputs from its outputs. Every add/sub merge or group that misses is
explained as a warning (a "near miss"). Torch-free: the editor runs it per edit.
"""
from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from revstudio.core.diagnostics import Diagnostic, warning
from revstudio.core.graph import Graph
from revstudio.core.spec import registry

from .regions_view import View, port_of, reaches, reentering

SOURCES = frozenset({"Input", "GroupInput"})
SINKS = frozenset({"Output", "GroupOutput"})
GROUP_TYPES = frozenset({"Group", "Repeat"})


def layout_only(type_id: str) -> bool:
    """Whether a step of type ``type_id`` only moves values around (its ``NodeSpec.layout_only``):
    a region made of such steps alone saves nothing. An unknown type computes."""
    spec = registry.find(type_id)
    return spec is not None and spec.layout_only


@dataclass
class Coupling:
    """A wired coupling ``y = a + sign * F(b...)`` found at a Merge node."""

    merge: str
    a: str                    # the stream value the merge consumes ("node.port")
    f: str                    # the value of F's result ("node.port")
    sign: int                 # +1 (add) or -1 (sub)
    body: list[str]           # F's nodes, in topological order (may be empty: F = identity)
    b: list[str]              # F's inputs ("node.port"), read, not consumed


@dataclass
class Region:
    """A maximal reversible region: its steps run in ``steps`` order."""

    id: str
    steps: list[str]                       # step node ids (invertible nodes and coupling merges)
    nodes: list[str]                       # steps + F nodes, in topological order
    inputs: list[str]                      # values read from outside ("node.port")
    outputs: list[str]                     # values kept after the forward pass ("node.port")
    side: list[str] = field(default_factory=list)  # inputs only F reads: kept, not rebuilt
    couplings: dict[str, Coupling] = field(default_factory=dict)

    def __repr__(self) -> str:
        # short in a notebook whatever the region's size: its nodes are in ``region.nodes``
        return (f"<Region {self.id!r}: {len(self.steps)} steps, {len(self.nodes)} nodes, "
                f"inputs {', '.join(self.inputs) or '-'}; outputs {', '.join(self.outputs) or '-'}>")

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "nodes": list(self.nodes), "inputs": list(self.inputs),
                "outputs": list(self.outputs)}


@dataclass
class RegionAnalysis:
    regions: list[Region]
    near_misses: list[Diagnostic]
    order: list[str]                       # a topological order honouring the regions' step order

    def region_of(self, node_id: str) -> Region | None:
        for region in self.regions:
            if node_id in region.nodes:
                return region
        return None


def analyze(graph: Graph, report: Any, *, keep_trivial: bool = False,
            group_reports: Mapping[str, Any] | None = None) -> RegionAnalysis:
    """Partition ``graph`` into maximal reversible regions plus ordinary nodes.

    ``report`` is the check report (shapes, order, per-node ``ok``); nodes the
    check could not infer are left out. Regions of structural steps alone
    (Split/Concat/...) save nothing and are dropped unless ``keep_trivial``.
    ``group_reports``: the project's body reports by group name (the top-level check
    report's ``groups``), for a ``graph`` that is itself a group body; by default
    ``report.groups``.
    """
    return _Analyzer(graph, report, {}, group_reports).run(keep_trivial)


class _Analyzer:
    def __init__(self, graph: Graph, report: Any, body_cache: dict[str, str | None],
                 group_reports: Mapping[str, Any] | None = None) -> None:
        self.v = View(graph, report)
        self.graph = graph
        self.report = report
        self.body_cache = body_cache   # group name -> None if invertible, else why not
        # Body reports by group name, the project's (a body's own report has none): a
        # Group or Repeat nested in a body is judged by its body's report like a top-level one.
        self.group_reports: Mapping[str, Any] = (
            group_reports if group_reports is not None else getattr(report, "groups", None) or {})
        self.near: list[Diagnostic] = []
        self.group_near: dict[str, Diagnostic] = {}

    # ---- which nodes are steps -----------------------------------------
    def body_problem(self, name: str, stack: tuple[str, ...] = ()) -> str | None:
        """Why the group body ``name`` is not invertible, or None if it is."""
        if name in self.body_cache:
            return self.body_cache[name]
        root_groups = getattr(self, "root_groups", None) or self.graph.groups
        body = root_groups.get(name)
        if body is None or name in stack:
            return f"group {name!r} is missing or contains itself"
        self.body_cache[name] = f"group {name!r} is being analysed"  # guards recursion
        sub_report = self.group_reports.get(name)
        sub = _Analyzer(_with_groups(body, root_groups), sub_report, self.body_cache, self.group_reports)
        sub.root_groups = root_groups  # type: ignore[attr-defined]
        why = sub.invertible_body()
        self.body_cache[name] = why
        return why

    def invertible_body(self) -> str | None:
        """None if this (body) graph is one region mapping all GroupInputs to all GroupOutputs."""
        v = self.v
        result = self.run(keep_trivial=True)
        members = {n for r in result.regions for n in r.nodes}
        for n in v.order:
            if v.type(n) in SOURCES | SINKS or n in members:
                continue
            return f"its node {n} ({v.type(n)}) is not invertible"
        if len(result.regions) != 1:
            return "it does not form a single reversible chain" if result.regions else "it has no invertible node"
        region = result.regions[0]
        ins = [o for n in v.order if v.type(n) == "GroupInput" for o in v.outputs[n]]
        if set(region.inputs) != set(ins) or region.side:
            return "not every GroupInput is rebuilt from the outputs (an input is only read, or unused)"
        outs = {v.src.get((n, "in")) for n in v.order if v.type(n) == "GroupOutput"}
        if set(region.outputs) != outs:
            return "a value computed inside is neither passed on nor sent to a GroupOutput"
        return None

    def is_invertible_node(self, n: str) -> bool:
        spec = self.v.specs[n]
        t = self.v.type(n)
        if spec is None or t in SOURCES | SINKS:
            return False
        if t in GROUP_TYPES:
            name = self.v.params[n].get("group", "")
            why = self.body_problem(name)
            if why is not None:
                # Said only if the node ends up in no region: as part of a coupling's F a
                # non-invertible group is fine (F is recomputed, never inverted).
                # A node named after its group (the editor's default) names it once.
                what = f"{t.lower()} {n}" if n == name else f"{t.lower()} {n} (group {name!r})"
                self.group_near[n] = warning(n, f"{what} is not reversible because {why}; "
                                                "its activations are stored")
                return False
            return True
        return bool(spec.invertible)

    # ---- wired couplings ----------------------------------------------
    def f_subgraph(self, merge: str, fval: str) -> tuple[list[str], list[str]]:
        """F's nodes (exclusive ancestors of ``fval`` feeding only this merge) and its inputs."""
        v = self.v
        target = (merge, port_of(v, merge, fval))
        body: set[str] = set()
        # Walk up from F's result in reverse topological order: a node joins F when
        # everything that reads it is already in F (readers always come later).
        heap = [(-v.index[v.producer(fval)], v.producer(fval))]
        queued = {heap[0][1]}
        while heap:
            _, n = heapq.heappop(heap)
            if v.type(n) in SOURCES:
                continue
            readers = [r for o in v.outputs[n] for r in v.readers.get(o, [])]
            if readers and all(r[0] in body or r == target for r in readers):
                body.add(n)
                for value in v.inputs[n]:
                    p = v.producer(value)
                    if p not in queued:
                        queued.add(p)
                        heapq.heappush(heap, (-v.index[p], p))
        ordered = sorted(body, key=v.index.__getitem__)
        b: list[str] = []
        for n in ordered:
            for value in v.inputs[n]:
                if v.producer(value) not in body and value not in b:
                    b.append(value)
        if not ordered:
            b = [fval]
        return ordered, b

    def couplings(self, steps: set[str]) -> dict[str, Coupling]:
        v = self.v
        found: dict[str, Coupling] = {}
        for n in v.order:
            if v.type(n) != "Merge":
                continue
            mode = v.params[n].get("mode")
            if mode not in ("add", "sub"):
                continue
            ins = v.inputs[n]
            if len(ins) != 2:
                self.near.append(warning(n, f"merge {n} is not a coupling: it has {len(ins)} inputs; a "
                                            "coupling adds exactly two (the stream and F's result)"))
                continue
            options = [(ins[0], ins[1])] + ([(ins[1], ins[0])] if mode == "add" else [])
            tried = [(a, f, *self.f_subgraph(n, f)) for a, f in options]
            # An operand computed by its own sub-graph is F; reading the plain
            # stream as F (F = identity) is only right when neither operand has one.
            if any(body for _a, _f, body, _b in tried):
                tried = [t for t in tried if t[2]]
            reasons = []
            for a, f, body, b in tried:
                why = self.coupling_problem(n, a, f, body, b)
                if why is None:
                    found[n] = Coupling(n, a, f, 1 if mode == "add" else -1, body, b)
                    self.explain_shared_operand(n, f, body, steps)
                    break
                reasons.append(why)
            else:
                self.near.append(warning(n, f"merge {n} is not a coupling: {reasons[0]}"))
        # a merge inside another coupling's F is just part of that function
        inner = {m for c in found.values() for m in c.body}
        return {m: c for m, c in found.items() if m not in inner}

    def explain_shared_operand(self, merge: str, f: str, body: list[str], steps: set[str]) -> None:
        """F = identity because the operand's producer is also read elsewhere: say so."""
        v = self.v
        producer = v.producer(f)
        if body or producer in steps or v.type(producer) in SOURCES or v.type(producer) == "Merge":
            return
        others = sorted({r[0] for o in v.outputs[producer] for r in v.readers.get(o, []) if r[0] != merge})
        if others:
            self.near.append(warning(merge, f"merge {merge} cannot recompute {producer}: its result is also "
                                            f"read by {', '.join(others)}, so it is stored; feed "
                                            f"{', '.join(others)} from another value to make {producer} part "
                                            "of the coupling's F"))

    def coupling_problem(self, merge: str, a: str, f: str, body: list[str], b: list[str]) -> str | None:
        v = self.v
        operand = v.producer(f) if body else f
        for value in b:
            if value == a:
                return self.f_reads_its_stream(merge, a, operand, body)
        if v.producer(a) in body:
            return f"its operand {a} is computed by F itself"
        return None

    def f_reads_its_stream(self, merge: str, a: str, operand: str, body: list[str]) -> str:
        """Why F reading ``a``, the value ``merge`` adds F's result to, is no coupling, and which
        wire to change: the other part of a Split (or any multi-output node) that ``a`` came from,
        wired into the F input that reads ``a`` (the beginner's wrong-port slip)."""
        v = self.v
        at = [f"{n}.{p}" for n, p in v.readers.get(a, []) if n in body]
        where = f" at {at[0]}" if len(at) == 1 else ""
        text = (f"operand {operand} reads {a}{where}, which this merge consumes, so backward could not "
                f"rebuild {a} from the merge's result; a coupling adds F of the other part "
                "(y1 = x1 + F(x2))")
        others = [o for o in v.outputs.get(v.producer(a), []) if o != a]
        if len(at) == 1 and len(others) == 1:
            return f"{text}: wire {others[0]} into {at[0]} instead"
        return f"{text}; to make it one, feed F from a value this merge does not read (a Split's other part)"

    # ---- regions --------------------------------------------------------
    def run(self, keep_trivial: bool) -> RegionAnalysis:
        v = self.v
        steps = {n for n in v.order if self.is_invertible_node(n)}
        couplings = self.couplings(steps)
        fnodes = {m for c in couplings.values() for m in c.body}
        steps = (steps - fnodes) | set(couplings)
        while True:
            order, conflict = self.step_order(steps, couplings)
            if conflict is None:
                break
            steps.discard(conflict[0])
            couplings.pop(conflict[0], None)
            self.near.append(warning(conflict[0], f"merge {conflict[0]} is not a coupling: {conflict[1]}"))
        regions = self.partition(steps, couplings, order)
        if not keep_trivial:
            kept = [r for r in regions if r.couplings or not all(layout_only(v.type(s)) for s in r.steps)]
            # (one that is the whole graph stays: the model is then invertible end to end, a
            # Squeeze between an Input and an Output as much as a flow)
            whole = len(regions) == 1 and all(n in regions[0].nodes or v.type(n) in SOURCES | SINKS for n in v.order)
            regions = regions if whole else kept
        members = {n for r in regions for n in r.nodes}
        self.near.extend(d for n, d in self.group_near.items() if n not in members)
        return RegionAnalysis(regions, self.near, order)

    def consumers(self, value: str, steps: set[str], couplings: Mapping[str, Coupling]) -> list[str]:
        """Steps that rebuild ``value`` in backward (their main input or coupling stream)."""
        out = []
        for node, _port in self.v.readers.get(value, []):
            if node in couplings:
                if couplings[node].a == value:
                    out.append(node)
            elif node in steps:
                out.append(node)
        return out

    def step_order(self, steps: set[str], couplings: Mapping[str, Coupling]) -> tuple[list[str], Any]:
        """Topological order where each coupling runs before the steps that consume its b.

        Returns (order, None) or (partial, (merge, why)) for a coupling that cannot be ordered.
        """
        v = self.v
        members = steps | {n for c in couplings.values() for n in c.body}
        extra: dict[str, set[str]] = {n: set() for n in v.order}
        for m, c in couplings.items():
            for value in c.b:
                cons = [s for s in self.consumers(value, steps, couplings) if s != m]
                if not cons or self.kept(value, members):
                    continue
                # a consumer that is not upstream of the merge can be ordered after it
                after = [s for s in cons if not reaches(v, s, m)]
                if not after:
                    return [], (m, f"operand reads {value}, which {cons[0]} consumes before this merge; "
                                   "rebuilding the merge's stream needs it afterwards")
                for s in after:
                    extra[m].add(s)
        succ: dict[str, set[str]] = {n: set(extra[n]) for n in v.order}
        for (node, _port), value in v.src.items():
            succ[v.producer(value)].add(node)
        indeg = {n: 0 for n in v.order}
        for n in v.order:
            for s in succ[n]:
                indeg[s] += 1
        heap = [(v.index[n], n) for n in v.order if indeg[n] == 0]
        heapq.heapify(heap)
        out = []
        while heap:
            _, n = heapq.heappop(heap)
            out.append(n)
            for s in succ[n]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    heapq.heappush(heap, (v.index[s], s))
        if len(out) < len(v.order):
            stuck = [m for m in couplings if m not in out]
            m = max(stuck, key=v.index.__getitem__)
            return out, (m, "its F reads a value that other couplings consume first; the order cannot "
                            "be rebuilt backwards")
        return out, None

    def kept(self, value: str, members: set[str]) -> bool:
        """True if ``value`` is read outside the steps/F nodes (so it is kept anyway)."""
        return any(node not in members for node, _p in self.v.readers.get(value, []))

    def partition(self, steps: set[str], couplings: dict[str, Coupling], order: list[str]) -> list[Region]:
        v = self.v
        member_of: dict[str, str] = {s: s for s in steps}
        for coupling in couplings.values():
            for n in coupling.body:
                member_of[n] = coupling.merge
        # nodes by step and positions, once: per-region scans of every node were quadratic
        by_step: dict[str, list[str]] = {}
        for n, owner in member_of.items():
            by_step.setdefault(owner, []).append(n)
        position = {n: i for i, n in enumerate(order)}
        cut: set[tuple[str, str]] = set()
        while True:
            parent = {s: s for s in steps}

            def find(x: str, parent: dict[str, str] = parent) -> str:
                while parent[x] != x:
                    parent[x] = parent[parent[x]]
                    x = parent[x]
                return x

            for (node, _port), value in v.src.items():
                src, dst = member_of.get(v.producer(value)), member_of.get(node)
                if src is None or dst is None or src == dst or (src, dst) in cut:
                    continue
                parent[find(src)] = find(dst)
            groups: dict[str, set[str]] = {}
            for s in steps:
                groups.setdefault(find(s), set()).add(s)
            broken = False
            for members in groups.values():
                nodes = {n for m in members for n in by_step.get(m, ())}
                reenter = reentering(v, nodes)
                if reenter:
                    late = {member_of[n] for n in reenter}
                    for early in members - late:
                        for moved in late:
                            cut.add((early, moved))
                            cut.add((moved, early))
                    broken = True
            if not broken:
                break
        regions = []
        for members in groups.values():
            regions.append(self.region(members, couplings, member_of, order, by_step, position))
        regions.sort(key=lambda r: v.index[r.nodes[0]])
        return regions

    def region(self, members: set[str], couplings: Mapping[str, Coupling], member_of: Mapping[str, str],
               order: list[str], by_step: Mapping[str, list[str]] | None = None,
               position: Mapping[str, int] | None = None) -> Region:
        v = self.v
        if by_step is None or position is None:
            nodes = [n for n in order if member_of.get(n) in members]
            ordered_steps = [n for n in order if n in members]
        else:  # the same lists, from this region's own nodes (linear in the region, not the graph)
            nodes = sorted((n for m in members for n in by_step.get(m, ()) if n in position), key=position.__getitem__)
            ordered_steps = sorted((m for m in members if m in position), key=position.__getitem__)
        node_set = set(nodes)
        inputs: list[str] = []
        seen: set[str] = set()
        side: list[str] = []
        for n in nodes:
            for value in v.inputs[n]:
                if value in seen or v.producer(value) in node_set:
                    continue
                seen.add(value)
                inputs.append(value)
        first_use: dict[str, int] = {}   # value -> position of the first step consuming it
        for i, s in enumerate(ordered_steps):
            for x in ([couplings[s].a] if s in couplings else v.inputs[s]):
                first_use.setdefault(x, i)
        last_read: dict[str, int] = {}   # value -> position of the last coupling reading it as b
        for i, s in enumerate(ordered_steps):
            if s in couplings:
                for x in couplings[s].b:
                    last_read[x] = i
        # An input F reads is kept when nothing rebuilds it in time: nobody consumes it,
        # or it is consumed before a coupling reads it (backward meets that coupling first).
        side = [x for x in inputs if x not in first_use or first_use[x] < last_read.get(x, -1)]
        outputs: list[str] = []
        for n in ordered_steps:
            for value in ([f"{n}.out"] if n in couplings else v.outputs[n]):
                readers = v.readers.get(value, [])
                outside = any(r[0] not in node_set for r in readers)
                consumed_inside = any(r[0] in members and (r[0] not in couplings or couplings[r[0]].a == value)
                                      for r in readers)
                if outside or not consumed_inside:
                    outputs.append(value)
        rid = "region-" + ordered_steps[0]
        return Region(rid, ordered_steps, nodes, inputs, outputs, side,
                      {m: couplings[m] for m in ordered_steps if m in couplings})


def body_regions(graph: Graph, report: Any, name: str) -> tuple[list[Region], Any] | None:
    """(regions, analyzer) of the group body ``name``, analysed as the compiler analyses it
    (regions of structural steps alone kept: a body may be one); None without the body or
    its part of the check's report."""
    body = graph.groups.get(name)
    sub_report = (getattr(report, "groups", {}) or {}).get(name)
    if body is None or sub_report is None:
        return None
    sub = _Analyzer(_with_groups(body, graph.groups), sub_report, {}, getattr(report, "groups", None) or {})
    sub.root_groups = graph.groups  # type: ignore[attr-defined]
    return list(sub.run(keep_trivial=True).regions), sub


def body_steps(graph: Graph, report: Any, name: str) -> list[tuple[str, str]] | None:
    """(node id, type) of the steps an invertible group body ``name`` runs as, in order, as the
    compiler splices them into a region (a wired coupling is one step, typed "coupling");
    None where the body is not one invertible region."""
    return steps_of(body_regions(graph, report, name))


def steps_of(found: tuple[list[Region], Any] | None) -> list[tuple[str, str]] | None:
    """:func:`body_steps` of a body already analysed (what :func:`body_regions` returned)."""
    if found is None or len(found[0]) != 1:
        return None
    (region,), sub = found
    couplings = getattr(region, "couplings", {}) or {}
    return [(n, "coupling" if n in couplings else sub.v.type(n)) for n in region.steps]


def _with_groups(body: Graph, groups: Mapping[str, Graph]) -> Graph:
    """A body sees the project's groups (nested Group/Repeat nodes refer to them)."""
    if body.groups is groups:
        return body
    view = Graph(body.name)
    view.nodes = body.nodes
    view.edges = body.edges
    view.groups = dict(groups)
    return view
