"""Static memory estimate from shapes alone, per node and per execution mode.

For each mode ("standard", "reversible", "checkpoint") it counts parameter
bytes and the activation bytes kept for backward: in standard mode what
autograd saves for each node type (``save_rules``); inside a reversible region
only the region's outputs; inside a checkpointed segment only its inputs.
Each kept tensor is counted once, views resolve to the tensor they view, and
tensors the caller owns (the inputs) are excluded, as the measurement does.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from revstudio.core.graph import Graph, PortRef
from revstudio.core.notebook_repr import NotebookRepr

from .estimate_bodies import _Bodies
from .estimate_facts import _facts
from .estimate_segments import _checkpoint_segments, _region_segment_inputs
from .estimate_units import MODES, _keeping, _peaks, known_mode
from .estimate_walk import _region_parts, _values_of, _Walker, no_collection
from .number_types import DTYPE_BYTES, fmt_bytes, input_dtype
from .number_types import LOW_PRECISIONS as LOW_PRECISIONS  # (re-exported: callers import it here)
from .number_types import input_bytes as input_bytes
from .number_types import input_dtypes as input_dtypes
from .number_types import precision_note as precision_note
from .peak import Walk
from .peak_bare import moved_inputs, with_correction
from .peak_steps import sample_bytes

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
    """Activation bytes a reversible region accounts for in standard vs reversible mode.

    ``standard_bytes`` / ``reversible_bytes`` are what the region's own nodes keep;
    ``freed_input_bytes`` what the layers feeding it no longer keep because the
    region rebuilds their outputs in backward. ``saved_bytes`` is the difference
    reversible mode makes for this region, negative when it costs more (its kept
    outputs are wide streams), so the savings of the regions and the figures of
    the nodes add up to the mode totals exactly.
    """

    standard_bytes: int
    reversible_bytes: int
    freed_input_bytes: int = 0

    @property
    def saved_bytes(self) -> int:
        return self.standard_bytes - self.reversible_bytes + self.freed_input_bytes

    def to_json(self) -> dict[str, int]:
        return {
            "standard_bytes": self.standard_bytes,
            "reversible_bytes": self.reversible_bytes,
            "freed_input_bytes": self.freed_input_bytes,
            "saved_bytes": self.saved_bytes,
        }


@dataclass
class MemoryEstimate(NotebookRepr):
    """The static memory estimate of a training step at ``batch`` (``rs.check(g).estimate``).

    ``summary_lines()`` words it; ``peak_bytes(mode)`` and ``activation_bytes(mode)`` (kept for
    backward) per mode ("standard", "reversible", "checkpoint"), ``parameter_bytes()``,
    ``totals()``, ``nodes`` and ``regions`` (per node and region), ``saved_by_region(id)``;
    ``to_json()`` is the ``"estimate"`` of ``check --json``.
    """

    batch: int
    dtype: str
    element_bytes: int
    nodes: dict[str, NodeEstimate] = field(default_factory=dict)
    regions: dict[str, RegionEstimate] = field(default_factory=dict)
    # the simulated training step per mode (``peak``), computed when first asked for
    _peaks_of: Any = field(default=None, repr=False)
    # what explains each node's bytes (``explain``), computed when first asked for
    _facts_of: Any = field(default=None, repr=False)
    # the simulated reversible step with some regions' first steps kept (``peak_keeping``)
    _keeping_of: Any = field(default=None, repr=False)

    @property
    def facts(self) -> dict[str, Any]:
        """Who keeps which value, per mode: what ``explain`` words node tooltips from."""
        found = self.__dict__.get("_facts")
        if found is None:
            found = self.__dict__["_facts"] = self._facts_of() if self._facts_of is not None else {}
        return found

    @property
    def peaks(self) -> dict[str, Walk]:
        """The simulated step per mode: its peak, where it happens, what forward keeps."""
        found = self.__dict__.get("_peaks")
        if found is None:
            found = self.__dict__["_peaks"] = self._peaks_of() if self._peaks_of is not None else {}
        return found

    @property
    def walked(self) -> bool:
        """Whether the peaks and facts are computed (else reading them walks the step then)."""
        return (("_peaks" in self.__dict__ or self._peaks_of is None)
                and ("_facts" in self.__dict__ or self._facts_of is None))

    @property
    def batch_breaks(self) -> tuple[int, ...]:
        """Batches from which the peak may be *lower* than at the batch before: a region's
        stream updates then work in more, smaller pieces (``stream_updates.update_break``). Between
        them the peak grows with the batch; ``estimate_fit`` searches each stretch."""
        self.peaks  # noqa: B018 - the walk finds them
        return tuple(self.__dict__.get("_breaks", ()))

    def peak_bytes(self, mode: str) -> int:
        """Estimated peak of one training step in ``mode`` (excluding weights and the input batch)."""
        walk = self.peaks.get(mode)
        return walk.peak if walk is not None else self.activation_bytes(mode) + self.parameter_bytes()

    def parameter_bytes(self) -> int:
        return sum(n.parameter_bytes for n in self.nodes.values())

    def peak_keeping(self, heads: Mapping[str, AbstractSet[str]],
                     inside: Mapping[str, tuple[int, int]] | None = None) -> Walk:
        """The simulated reversible step where the nodes ``heads[region id]`` (a region's first
        steps, as a memory budget keeps them) run as standard mode does and the rest of each
        region reversibly, reading the values that cross the cut as its inputs; ``inside[region
        id]``: where the cut falls inside a Repeat, (the bytes its kept copies keep, how many)."""
        if self._keeping_of is None:
            raise ValueError("this estimate was made without its walk")
        return self._keeping_of(heads, inside or {})

    def __repr__(self) -> str:
        # a notebook's display: totals per mode, not one NodeEstimate per node (summary_lines() has more)
        kept = ", ".join(f"{mode} {fmt_bytes(self.activation_bytes(mode))}" for mode in MODES)
        return (f"<MemoryEstimate batch {self.batch}, {self.dtype}: {len(self.nodes):,} nodes, "
                f"{len(self.regions)} region{'s' * (len(self.regions) != 1)}; parameters "
                f"{fmt_bytes(self.parameter_bytes())}; kept for backward: {kept}>")

    def activation_bytes(self, mode: str) -> int:
        # (the mode checked once, not once per node: the status bar, badges and Inspector ask ~18 times
        # when an undo shows a state the memo holds, 18,000 checks at 1,007 nodes)
        mode = known_mode(mode)
        return sum(n.activation_bytes[mode] for n in self.nodes.values())

    def totals(self) -> dict[str, dict[str, int]]:
        params = self.parameter_bytes()
        out = {}
        for mode in MODES:
            act = self.activation_bytes(mode)
            out[mode] = {"parameter_bytes": params, "activation_bytes": act, "total_bytes": params + act}
        return out

    def saved_by_region(self, region_id: str) -> int:
        """Bytes a region saves, negative if it costs (the editor labels its backdrop with it)."""
        region = self.regions.get(region_id)
        return region.saved_bytes if region else 0

    def summary_lines(self) -> list[str]:
        """Human lines: totals per mode, then what each region saves and why modes differ."""
        from .explain import mode_notes, region_text

        lines = [f"batch {self.batch}, {self.dtype}; parameters {fmt_bytes(self.parameter_bytes())} "
                 "(weights; gradients are part of the peak)"]
        standard = self.activation_bytes("standard")
        std_peak = self.peak_bytes("standard")
        for mode in MODES:
            act = self.activation_bytes(mode)
            peak = self.peak_bytes(mode)
            ratio = f" ({act / standard:.0%} of standard)" if standard and mode != "standard" else ""
            pratio = f" ({peak / std_peak:.0%})" if std_peak and mode != "standard" else ""
            lines.append(f"{mode:<11} kept for backward {fmt_bytes(act)}{ratio}; "
                         f"peak of a training step {fmt_bytes(peak)}{pratio}")
        for rid, region in self.regions.items():
            lines.append(f"region {rid} {region_text(region)}")
        lines += mode_notes(self)
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
            "modes": {mode: {**figures, "kept_bytes": figures["activation_bytes"],
                             "peak_bytes": self.peak_bytes(mode), "peak_phase": self.peaks[mode].phase,
                             "peak_at": self.peaks[mode].at} if mode in self.peaks else figures
                      for mode, figures in self.totals().items()},
            "notes": _notes(self),
            "nodes": {nid: n.to_json() for nid, n in self.nodes.items()},
            "regions": {rid: r.to_json() for rid, r in self.regions.items()},
        }


def estimate(
    graph: Graph,
    report: Any,
    regions: Sequence[Any] | None = None,
    batch: int = 1,
    dtype: str | None = None,
    stream_dtype: str | None = None,
    order: Sequence[str] | None = None,
    device: str = "cpu",
) -> MemoryEstimate:
    """Per-node, per-mode memory estimate of ``graph`` from the shapes in ``report``.

    ``regions`` defaults to ``report.regions``; each needs ``id``, ``nodes``,
    ``inputs`` and ``outputs`` ("node.port" strings). ``stream_dtype`` is the
    dtype regions keep their streams in (default: 8 bytes per value, what the
    compiler's float32 pairs and float64 streams take). Nodes without inferred shapes contribute
    nothing. ``order`` is the execution order (the regions analysis's; the
    check's topological order by default): it decides which ordinary nodes
    checkpoint mode groups into segments. ``device``: "cpu" or an accelerator's type ("cuda"),
    whose runtime updates a region's streams in larger pieces (more temporaries at the peak)
    and whose dropout keeps a bool mask (the CPU's, one in the input's dtype). Never raises on a checked graph.
    """
    with no_collection():  # tens of thousands of short-lived tuples and sets, and no cycles
        return _estimate(graph, report, regions, batch, dtype, stream_dtype, order, device)


def _estimate(graph: Graph, report: Any, regions: Sequence[Any] | None, batch: int, dtype: str | None,
              stream_dtype: str | None, order: Sequence[str] | None, device: str = "cpu") -> MemoryEstimate:
    dtype = dtype if dtype in DTYPE_BYTES else input_dtype(graph)
    elem = DTYPE_BYTES[dtype]
    # a compensated float32 pair ("float32x2", the compiler's choice for float32 models)
    # takes the 8 bytes of a float64 value
    stream_bytes = DTYPE_BYTES.get(stream_dtype or "float64", 8)
    batch = max(1, int(batch))
    regions = list(report.regions if regions is None else regions)
    walker = _Walker(graph, report, batch, elem, _Bodies(graph, report, batch, elem, device, dtype))

    parts = [_region_parts(r) for r in regions]
    walker.region_of = {n: rid for rid, nodes, _, _ in parts for n in nodes}
    walker.regions_changed()  # the fused views depend on the regions
    for _, _, _, kept_refs in parts:
        for ref in kept_refs:
            try:
                p = PortRef.parse(ref)
            except ValueError:
                continue
            walker.region_kept.add((p.node, p.port))
    walker.regions_changed()
    in_regions = set().union(*(nodes for _, nodes, _, _ in parts)) if parts else set()
    region_outputs = [v for _, _, _, outs in parts for v in _values_of(walker, outs)]

    runs: list[list[str]] = []
    seg_nodes, seg_inputs = _checkpoint_segments(walker, list(order or report.order), walker.region_of, runs)
    links: dict[str, int] = {}  # bytes kept between the copies of a Repeat a cut falls inside
    region_inputs: list[Value | None] = []
    for r, (_, _, ins, _) in zip(regions, parts):
        kept_in, inner, unheld = _region_segment_inputs(walker, r)
        region_inputs += [v for v in _values_of(walker, ins) if v not in unheld] + kept_in
        links.update(inner)

    per_mode = {
        # checkpoint mode recomputes each region, and each run of ordinary nodes,
        # as one torch.utils.checkpoint segment, which keeps only its inputs
        "standard": walker.per_node(*walker.kept(set(), ())),
        # the runtime keeps a region's residual streams wide (float32 pairs or float64)
        # when the model computes in float32 or narrower (so reconstruction error
        # cannot compound): the kept outputs take 8 bytes per value, but for those a flow
        # layer with weights makes in pairs (no correction)
        "reversible": walker.per_node(*walker.kept(in_regions, region_outputs),
                                      # (per region: skip network 95's y1, the next region's input,
                                      # was taken for one moved about there, with no correction)
                                      wide=[v for r, (_, _, _, outs) in zip(regions, parts)
                                            for v in with_correction(report.nodes, elem, stream_bytes,
                                                                     _values_of(walker, outs),
                                                                     moved_inputs(walker, [r]))],
                                      # (a wide output is kept as the value handed out and its rounding
                                      # residual, both in the model's dtype: a float64 stream of a
                                      # bfloat16 model keeps 4 bytes a value, a float32 pair 8)
                                      wide_bytes=min(stream_bytes, 2 * elem)),
        "checkpoint": _with_links(walker.kept(in_regions | seg_nodes, region_inputs + seg_inputs), links, walker),
    }
    if stream_bytes > elem:  # the inversion-error samples a region keeps of its inputs, with its first step
        for r in regions:
            first = next((s for s in getattr(r, "steps", ()) if s in per_mode["reversible"]), None)
            if first is not None:
                per_mode["reversible"][first] += sample_bytes(walker, _values_of(walker, getattr(r, "inputs", ())),
                                                              _values_of(walker, getattr(r, "side", ()) or ()))
    result = MemoryEstimate(batch=batch, dtype=dtype, element_bytes=elem)
    # A Group or Repeat inside a region runs as its body's steps, one at a time, spliced into
    # the region; the walk does so too where the body is one invertible region, and otherwise
    # counts it as one step, its whole body recomputed at once: an overestimate, flagged
    spliced = {nid for nid in in_regions if nid in report.nodes and _unspliced(graph, report, nid, walker.bodies)}
    for nid, info in report.nodes.items():
        saves = walker.saves.get(nid)
        result.nodes[nid] = NodeEstimate(
            type=info.type,
            parameter_bytes=int(info.parameters) * elem,
            activation_bytes={mode: per_mode[mode].get(nid, 0) for mode in MODES},
            approximate=bool(saves is not None and saves.approximate) or nid in spliced,
        )
    walk_order = list(order or report.order)
    def peaks() -> dict[str, Walk]:
        with no_collection():
            walks, breaks = _peaks(walker, walk_order, regions, runs, stream_bytes, device)
        result.__dict__["_breaks"] = breaks
        return walks

    result._peaks_of = peaks

    def keeping(heads: Mapping[str, AbstractSet[str]], inside: Mapping[str, tuple[int, int]]) -> Walk:
        with no_collection():
            return _keeping(walker, walk_order, regions, stream_bytes, heads, inside, device)

    result._keeping_of = keeping
    kept_sets = {"reversible": set(region_outputs), "checkpoint": set(region_inputs + seg_inputs)}
    result._facts_of = lambda: _facts(walker, kept_sets, seg_nodes)
    # a layer outside every region keeps less in reversible mode only because a region
    # rebuilds its output: count that to the region reading it, so the savings add up
    feeds: dict[str, str] = {}
    for rid, _nodes, ins, _ in parts:
        for v in _values_of(walker, ins):
            if v is not None and v[0] not in in_regions:
                feeds.setdefault(v[0], rid)
    for rid, nodes, _, _ in parts:
        result.regions[rid] = RegionEstimate(
            standard_bytes=sum(per_mode["standard"].get(n, 0) for n in nodes),
            reversible_bytes=sum(per_mode["reversible"].get(n, 0) for n in nodes),
            freed_input_bytes=sum(per_mode["standard"].get(n, 0) - per_mode["reversible"].get(n, 0)
                                  for n, r in feeds.items() if r == rid),
        )
    return result


def _unspliced(graph: Graph, report: Any, nid: str, bodies: _Bodies) -> bool:
    """A Group or Repeat in a region whose body the walk cannot run step by step."""
    if report.nodes[nid].type not in ("Group", "Repeat"):
        return False
    name = graph.resolved_params(nid).get("group") if nid in graph.nodes else None
    return not isinstance(name, str) or bodies.steps(name) is None


def _with_links(kept: tuple[set[Value], dict[str, int]], links: Mapping[str, int], walker: _Walker) -> dict[str, int]:
    values, extra = kept
    merged = dict(extra)
    for nid, n in links.items():
        merged[nid] = merged.get(nid, 0) + n
    return walker.per_node(values, merged)


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
                  optimizer: str | None = None, device: str = "cpu") -> int:
    """Bytes of the peak of one training step in ``mode`` at ``batch``, from shapes alone.

    What the step allocates on top of the weights and the input batch, as
    ``revstudio memory`` measures it: the activations kept for backward, the
    transient peak of backward (gradient buffers, a region's streams and one
    step rebuilt at a time, a checkpoint segment recomputed) and the parameters'
    gradients; plus, with ``optimizer`` ("sgd" with momentum, "adam", "adamw"),
    the optimizer's state. ``report`` is ``full_check``'s (its regions are used). ``device``:
    "cpu" or the accelerator's type ("cuda"), see :func:`estimate`.
    """
    _checked_mode(mode)
    est = estimate(graph, report, getattr(report, "regions", None) or [], batch=batch, dtype=dtype, device=device)
    return est.peak_bytes(mode) + _state_bytes(est.parameter_bytes(), optimizer)


def max_batch_that_fits(graph: Graph, report: Any, budget_bytes: int, *, mode: str, dtype: str | None = None,
                        optimizer: str | None = None, limit: int = 1 << 16, device: str = "cpu") -> int | None:
    """The largest batch whose training step fits in ``budget_bytes`` (None: not even batch 1).

    Counted against the budget: the weights, the input batch and
    :func:`estimate_peak` (with the optimizer's state when given). Peaks grow
    with the batch (almost linearly), so a guess from batch 1 and 2, a gallop and
    a bisection find it exactly in a handful of estimates (``estimate_fit``); at
    most ``limit``. ``estimate_fit.max_batches_that_fit`` answers several modes at once.
    ``device``: "cpu" or "cuda" (see :func:`estimate`).
    """
    from .estimate_fit import max_batches_that_fit

    return max_batches_that_fit(graph, report, budget_bytes, [mode], dtype=dtype, optimizer=optimizer,
                                limit=limit, device=device)[mode]


def _notes(est: MemoryEstimate) -> list[str]:
    from .explain import mode_notes

    return mode_notes(est)
