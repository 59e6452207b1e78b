"""The prices of a memory budget: per reversible region, what keeping each of its first steps
costs (what standard mode keeps for backward there, from the static estimate), what a cut after
them gives back, and what keeping them adds whatever the batch. ``budget`` chooses with them;
the compiled model takes them at batch 1 and scales them by the batch it runs. Torch-free.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from revstudio.core.find import FLOW_TYPES, find_in
from revstudio.core.graph import Graph

from .estimate import estimate
from .estimate_walk import _prod
from .peak_steps import SAMPLE_BYTES


def _step_nodes(region: Any) -> list[list[str]]:
    """The nodes of each step of an analysis region (a coupling's merge plus F's nodes)."""
    couplings = getattr(region, "couplings", {}) or {}
    out = []
    for step in region.steps:
        c = couplings.get(step)
        out.append([step, *(c.body if c is not None else ())])
    return out


def step_costs(graph: Graph, report: Any, *, batch: int = 1, dtype: str | None = None,
               regions: Sequence[Any] | None = None) -> dict[str, list[int]]:
    """{region id: standard-mode activation bytes each of its steps keeps}, in execution order.

    ``regions`` defaults to ``report.regions`` (the full check's); each needs
    ``steps`` (and ``couplings`` for wired couplings), like the compiler's analysis.
    """
    return step_prices(graph, report, batch=batch, dtype=dtype, regions=regions)[0]


Prices = tuple[dict[str, list[int]], dict[str, list[int]], dict[str, list[int]]]


def step_prices(graph: Graph, report: Any, *, batch: int = 1, dtype: str | None = None,
                regions: Sequence[Any] | None = None) -> Prices:
    """(:func:`step_costs`, refunds, fixed): ``refunds[rid][n]`` is what a cut after the first
    ``n`` steps gives back of their costs, ``fixed[rid][n]`` what keeping them adds whatever
    the batch: the bytes of the first ``n`` steps that do not grow with it, and the samples
    the reversible rest keeps of each value it rebuilds from the head (its inversion-error
    reference; the values themselves it releases). Costs and refunds are at ``batch`` and
    grow with it; ``fixed[rid][len]`` is the whole region's.

    The reversible rest releases the values it reads from the kept head and rebuilds them
    in backward, so a coupling merge whose result crosses the cut keeps nothing after all
    (its bytes were counted to it, as the value a later coupling saves). Only merges count:
    their results are tensors of their own, which the runtime can release; 0 elsewhere
    (inside a Repeat, for views), so the price errs high, never low.
    """
    own = regions is None  # the check's own regions: its estimate can be one of the two below
    regions = list(report.regions if regions is None else regions)
    if not regions:
        return {}, {}, {}
    # a step's bytes are a part per sample and a part whatever the batch (a flow layer's weight
    # built from its factors): priced at two batches, the constant part goes with the cuts
    # (``fixed``), so scaling the costs by the batch never scales it
    one = estimate(graph, report, regions, batch=1, dtype=dtype)
    # the second at ``batch`` itself where that is above one, so that the prices are exact
    # there (batch 1 is no per-sample rate where a rule changes at one sample: the runtime,
    # pricing batch 8 from batches 1 and 2, kept a random sequence model's whole region over
    # its budget); else the check's own, or batch 2
    other = getattr(report, "estimate", None) if own else None
    if (other is None or other.batch < 2 or other.dtype != one.dtype
            or (batch > 1 and other.batch != batch)):
        other = estimate(graph, report, regions, batch=max(2, int(batch)), dtype=dtype)
    scale = max(1, int(batch))
    span = int(other.batch) - 1  # (bytes at batch b = per sample * b + constant, exactly)
    # what is read at one batch, not fitted: the estimate at the batch priced (which values a
    # step saves can change at one sample: a loop-of-cells BiRNN saves its input only there,
    # and a cut's refund from batch 1, scaled, gave random sequence model 19 at batch 8 back
    # 16,384 B it kept, 40,928 B under a budget of 26,692 B)
    at = one if scale == 1 else other
    costs_of: dict[str, list[int]] = {}
    refunds_of: dict[str, list[int]] = {}
    fixed_of: dict[str, list[int]] = {}
    for region in regions:
        costs: list[int] = []
        consts: list[int] = []
        ends: list[int | None] = []  # per expanded step: the region step it completes (None: a copy inside)
        step_nodes = _step_nodes(region)
        for j, nodes in enumerate(step_nodes):
            at1 = sum(one.nodes[n].activation_bytes["standard"] for n in nodes if n in one.nodes)
            at_b = sum(other.nodes[n].activation_bytes["standard"] for n in nodes if n in other.nodes)
            per = max(0, -(-(at_b - at1) // span))  # (rounded up, should a rule not be exactly linear)
            const = max(0, at1 - per)
            times = _copies(graph, nodes[0])  # each copy of a Repeat is a step
            costs += _copy_shares(per * scale, times, _per_copy(one, other, nodes[0], span, scale))
            consts += [-(-const // times)] * times  # (rounded up: a share never prices low)
            ends += [None] * (times - 1) + [j]
        # the first steps read the region's inputs: where reversible mode releases those
        # (a stem layer's result), keeping the head keeps them alive, so the head pays for them
        freed = one.regions.get(region.id)
        freed_at = at.regions.get(region.id)
        if costs and freed_at is not None:
            costs[0] += max(0, int(freed_at.freed_input_bytes))
        if costs and find_in([graph.nodes[n[0]] for n in step_nodes if n[0] in graph.nodes], graph.groups, FLOW_TYPES):
            # a flow's head hands its log-determinant so far to the rest, which copies it (the
            # runtime's wide dtype): one more float64 per sample at any cut
            costs[0] += 8 * scale
        costs_of[region.id] = costs
        refunds_of[region.id] = refunds = _cut_refunds(graph, report, region, step_nodes, ends, at)
        whole = 0  # what reversible mode keeps of the region whatever the batch (its inputs' samples)
        if freed is not None and costs:  # kept whole, what reversible mode keeps for it (its
            # wide outputs, per sample; its inversion-error samples, per region) is given back
            at1 = max(0, int(freed.reversible_bytes))
            at_b = other.regions.get(region.id)
            per = at1 if at_b is None else max(0, (int(at_b.reversible_bytes) - at1) // span)
            refunds[len(costs)] = per * scale
            whole = at1 - per
        samples = [SAMPLE_BYTES * n for n in _cut_values(graph, step_nodes, ends)]
        fixed_of[region.id] = [samples[n] + sum(consts[:n]) for n in range(len(samples))]
        if whole and len(fixed_of[region.id]) > len(costs):
            fixed_of[region.id][len(costs)] -= whole
    return costs_of, refunds_of, fixed_of


# steps whose inverse is a view or a copy: keeping them saves no rebuild worth a byte
_LAYOUT_STEPS = frozenset({"Split", "Concat", "Squeeze", "Reshape", "Flatten", "Permute"})


def step_worth(graph: Graph, regions: Sequence[Any]) -> dict[str, list[bool]]:
    """{region id: per step (each copy of a Repeat one, as :func:`step_prices` counts them),
    whether keeping it saves a rebuild}: a coupling, a flow layer, a Group or a Repeat's copy
    does; a Split, Concat, Squeeze, Reshape, Flatten or Permute does not, whatever it costs (a
    region's first Split is priced with the region input it holds alive)."""
    out: dict[str, list[bool]] = {}
    for region in regions:
        flags: list[bool] = []
        for nodes in _step_nodes(region):
            node = graph.nodes.get(nodes[0])
            flags += [node is None or node.type not in _LAYOUT_STEPS] * _copies(graph, nodes[0])
        out[region.id] = flags
    return out


def _per_copy(one: Any, other: Any, step: str, span: int, scale: int) -> tuple[int, int] | None:
    """(bytes one copy of Repeat ``step`` keeps inside, bytes it keeps of the copy before's
    output) at the batch of the prices (``scale``), from the estimates at two batches."""
    a, b = one.facts.get("copies", {}).get(step), other.facts.get("copies", {}).get(step)
    if a is None or b is None:
        return None
    return tuple(max(0, -(-(y - x) // span)) * scale for x, y in zip(a, b))  # type: ignore[return-value]


def _copy_shares(total: int, times: int, per_copy: tuple[int, int] | None) -> list[int]:
    """A Repeat's bytes ``total`` as the prices of its copies: the first keeps what a copy keeps
    inside, each later one that and what it keeps of the copy before's output, and the last
    also what the Repeat's result keeps (read by the steps after it). A cut after a copy
    keeps just the copies before it: an equal share priced the first copies with the last
    one's output (+8 % on a budget's peak of a Repeat cut after its first copy). Without the
    split (or where it does not add up) equal shares, rounded up: a share never prices low."""
    if times > 1 and per_copy is not None:
        inner, between = per_copy
        shares = [inner] + [inner + between] * (times - 1)
        if sum(shares) <= total:
            shares[-1] += total - sum(shares)
            return shares
    return [-(-total // times)] * times


def _cut_values(graph: Graph, step_nodes: list[list[str]], ends: list[int | None]) -> list[int]:
    """Per cut position (0..len(ends)): how many values made before the cut are read after it
    (inside a Repeat, between its copies: one per copy output, counted from the Repeat's)."""
    step_of = {n: j for j, nodes in enumerate(step_nodes) for n in nodes}
    spans: list[tuple[int, int]] = []  # (made by step, last read by step) per value
    for j, nodes in enumerate(step_nodes):
        ports: dict[str, int] = {}
        for e in graph.edges_from(nodes[0]):
            r = step_of.get(e.dst.node)
            if r is not None and r > j:
                ports[e.src.port] = max(r, ports.get(e.src.port, r))
        spans += [(j, last) for last in ports.values()]
    widest = max((len(graph.ports(nodes[0])[1]) for nodes in step_nodes if nodes[0] in graph.nodes), default=1)
    out = [0] * (len(ends) + 1)
    for n in range(1, len(ends)):
        end = ends[n - 1]
        out[n] = widest if end is None else sum(1 for made, last in spans if made <= end < last)
    return out


def _cut_refunds(graph: Graph, report: Any, region: Any, step_nodes: list[list[str]], ends: list[int | None],
                 est: Any) -> list[int]:
    """Per cut position (0..len(ends)): the bytes of merge results read across it, at the
    batch of ``est``."""
    step_of = {n: j for j, nodes in enumerate(step_nodes) for n in nodes}
    outputs = {str(v) for v in getattr(region, "outputs", ())}
    outside = {v.partition(".")[0] for v in outputs}
    renames = _renames(graph, report, region)
    # (made by step, last read by step, bytes, cuts it does not cross: between a Concat and its Split)
    crossing: list[tuple[int, int, int, set[int]]] = []
    for j, nodes in enumerate(step_nodes):
        merge = nodes[0]
        node = graph.nodes.get(merge)
        if node is None or node.type != "Merge" or merge in outside or merge not in est.nodes:
            continue
        found: list[int | None] = []
        apart: set[int] = set()
        for e in graph.edges_from(merge):
            alias = renames.get((e.dst.node, e.dst.port))
            if alias is None:
                found.append(step_of.get(e.dst.node))
            elif f"{alias[0]}.{alias[1]}" in outputs:
                found.append(None)
            else:  # a Concat the next Split undoes: the runtime hands the very tensor on,
                # unless the cut falls between the two (then the head concatenates: a copy)
                found += [step_of.get(e2.dst.node) for e2 in graph.edges_from(alias[0], alias[1])]
                apart.add(step_of[e.dst.node])
        readers = [r for r in found if r is not None]
        if not readers or len(readers) < len(found):
            continue  # read outside the region too
        crossing.append((j, max(readers), int(est.nodes[merge].activation_bytes["standard"]), apart))
    crossing += _fresh_crossing(graph, report, step_nodes, est)
    out = [0] * (len(ends) + 1)
    for n in range(1, len(ends)):
        end = ends[n - 1]
        if end is not None:
            out[n] = sum(b for made, last, b, apart in crossing if made <= end < last and end not in apart)
    return out


# invertible layers that write their output to a tensor of their own
_FRESH_STEPS = frozenset({"ActNorm", "InvConv1x1", "AffineCoupling", "AdditiveCoupling"})


def _fresh_crossing(graph: Graph, report: Any, step_nodes: list[list[str]], est: Any
                    ) -> list[tuple[int, int, int, set[int]]]:
    """The outputs of flow layers and couplings (``_FRESH_STEPS``) that only later steps of the
    region save: a cut between the layer and those steps gives their bytes back, as for a
    merge. (made by step, first saved by step, bytes at the estimate's batch, no cut it does
    not cross)."""
    step_of = {n: j for j, nodes in enumerate(step_nodes) for n in nodes}
    facts = est.facts
    savers, bases = facts.get("savers", {}), facts.get("bases", {})
    found: list[tuple[int, int, int, set[int]]] = []
    for j, nodes in enumerate(step_nodes):
        info = report.nodes.get(nodes[0])
        if len(nodes) != 1 or info is None or info.type not in _FRESH_STEPS:
            continue
        for port, shape in info.outputs.items():
            value = (nodes[0], port)
            by = [step_of.get(n, -1) for n in savers.get(value, ())]
            readers = [step_of.get(e.dst.node, -1) for e in graph.edges_from(nodes[0], port)]
            if bases.get(value) != value or not by or min(by) <= j or min(readers, default=-1) < 0:
                continue  # a view, saved by none, by the layer itself, or read outside the region
            found.append((j, min(by), _prod(shape or ()) * int(est.element_bytes) * int(est.batch), set()))
    return found


def _renames(graph: Graph, report: Any, region: Any) -> dict[tuple[str, str], tuple[str, str]]:
    """{(Concat, input port): (Split, output port)} where a Concat step is undone by the next
    step, a Split into the same parts along the same axis: the runtime renames the parts
    (``runtime_layout.fuse_cat_slice``) instead of copying them, so a part read after the
    Split is the very tensor the Concat was given."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    steps = list(getattr(region, "steps", ()))
    for cat, cut in zip(steps, steps[1:]):
        a, b = graph.nodes.get(cat), graph.nodes.get(cut)
        if a is None or b is None or a.type != "Concat" or b.type != "Split":
            continue
        edges = graph.edges_from(cat)
        if len(edges) != 1 or edges[0].dst.node != cut:
            continue
        if graph.resolved_params(cat).get("dim", 0) != graph.resolved_params(cut).get("dim", 0):
            continue
        ins, outs = graph.ports(cat)[0], graph.ports(cut)[1]
        given = {e.dst.port: e.src for e in graph.edges_into(cat)}
        if len(ins) != len(outs) or any(
                p not in given or report.shape(given[p]) is None
                or report.shape(given[p]) != report.shape(f"{cut}.{o}") for p, o in zip(ins, outs)):
            continue
        out.update({(cat, p): (cut, o) for p, o in zip(ins, outs)})
    return out


def _copies(graph: Graph, step: str) -> int:
    """How many budget steps a region step counts as: a Repeat's copies, else 1."""
    node = graph.nodes.get(step)
    return max(1, int(graph.resolved_params(step).get("times", 1))) if node and node.type == "Repeat" else 1
