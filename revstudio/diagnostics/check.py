"""The full check: shapes and diagnostics, reversible regions, and a memory estimate.

``full_check(graph)`` is ``revstudio.check``: what ``revstudio check``, the
editor's live analysis and the compiler's users see. It is torch-free and
never raises: when the graph has errors, regions and the estimate are still
computed for the parts whose shapes are known.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from revstudio.core.check import IncrementalCheck, Report, check
from revstudio.core.diagnostics import Diagnostic, warning
from revstudio.core.graph import Graph
from revstudio.core.nogc import paused, without_cyclic_gc
from revstudio.core.scripting import expect_graph
from revstudio.core.spec import registry as default_registry

from .batch_checks import batch_errors
from .check_memo import AnalysisMemo, Derived, content_key, graph_content
from .estimate import estimate, input_dtype, input_dtypes
from .sizes import LAYER_LIMIT, measure, size_warnings


def _analyze_regions(graph: Graph, report: Report) -> tuple[list[Any], list[Diagnostic], list[str] | None]:
    """(regions, near misses, execution order) from the compiler's analysis."""
    try:
        from revstudio.compiler.regions import analyze
    except ImportError:  # a build without the compiler: shapes and estimate still work
        return [], [], None
    try:
        analysis = analyze(graph, report)
    except Exception as exc:  # an analysis bug must not hide the rest of the check
        return [], [warning(None, f"the reversibility analysis failed ({type(exc).__name__}: {exc}); "
                                  "regions are not shown. Please report this with the project file")], None
    order = getattr(analysis, "order", None)
    return list(analysis.regions), list(analysis.near_misses), list(order) if order else None


def mixed_dtype_warnings(graph: Graph) -> list[Diagnostic]:
    """A warning on each float32 Input of a model another Input makes float64: a model computes
    in one number type, so its samples are fed as float64 (``input_dtype``)."""
    declared = input_dtypes(graph)
    wide = next((nid for nid, name in declared.items() if name == "float64"), None)
    if wide is None:
        return []
    return [warning(nid, f"declares {name} but Input {wide!r} declares float64: a model computes in one "
                         f"number type, so this one runs in float64 and {nid!r}'s samples are fed as "
                         "float64; set this Input's dtype to float64 to say so")
            for nid, name in declared.items() if name != "float64"]


DEFAULT_BATCH = 32  # the training section's default batch_size (CONTRACTS section 1)


def training_batch(graph: Graph) -> int:
    """The batch the project trains with (``training.batch_size``), which its memory
    figures are for; the default when unset or not a whole number >= 1."""
    value = (getattr(graph, "training", None) or {}).get("batch_size", DEFAULT_BATCH)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return DEFAULT_BATCH
    return value


def training_device(graph: Graph) -> str:
    """The kind of device the project trains on (``training.device``), which its memory figures
    are for: "cuda" for ``cuda`` or ``cuda:N``; for ``auto`` (the default) the one it would pick
    here, read without importing torch (``device_probe.auto_device``); else "cpu"."""
    value = (getattr(graph, "training", None) or {}).get("device", "auto")
    text = value.strip().lower() if isinstance(value, str) else ""
    if text == "auto" or value is None:
        from .device_probe import auto_device

        return auto_device()
    return "cuda" if text.startswith("cuda") else "cpu"


def full_check(graph: Graph, batch: int | None = None, device: Any = None,
               incremental: IncrementalCheck | None = None, memo: AnalysisMemo | None = None) -> Report:
    """Check ``graph`` (an ``rs.Graph``): core check + reversible regions (with near-miss
    warnings) + memory estimate. Returns a :class:`Report`: ``valid``, ``errors``, ``warnings``,
    ``nodes`` (shapes and parameters per node), ``parameters``, ``regions``, ``estimate``.
    A graph with errors is reported, not raised; a ``graph`` that is not a Graph is a TypeError.

    ``batch`` only scales the estimate (shapes exclude the batch dimension);
    None: the project's training batch (:func:`training_batch`). ``device``: where the step
    would run, "cpu" or an accelerator ("cuda", "cuda:1", "mps", a ``torch.device``: any device
    torch names; another is refused), whose runtime updates streams differently
    (``diagnostics.stream_updates``); None: the project's (:func:`training_device`).
    ``incremental``: the editor's :class:`IncrementalCheck`, so shape inference redoes only what
    the last edit can affect (the report is the same). ``memo``: the editor's
    :class:`AnalysisMemo`, so a graph state seen a few edits ago (undo, redo) reuses its regions
    and estimate (the report is the same).
    """
    report, rest = check_in_two(graph, batch, device, incremental, memo)
    if rest is not None:
        rest()
    return report


@without_cyclic_gc  # allocation-heavy and cycle-free: see revstudio.core.nogc
def check_in_two(graph: Graph, batch: int | None = None, device: Any = None,
                 incremental: IncrementalCheck | None = None, memo: AnalysisMemo | None = None
                 ) -> tuple[Report, EstimateRest | None]:
    """:func:`full_check` in two parts, as the editor shows an edit: (the report with shapes,
    diagnostics and regions, and its estimate where the memo has it; ``rest``), where ``rest()``
    fills in the memory estimate and, with a memo, walks its peaks (the badges' and status bar's
    figures: most of an edit's check on a big graph) and keeps it there; ``rest`` is None when
    nothing is left. Call ``rest`` only while the graph is as it was checked (its estimate reads
    the live graph), or drop it; :class:`EstimateRest` also makes it from a copy of that state,
    on another thread.
    """
    expect_graph(graph, "rs.check")
    if batch is None:
        batch = training_batch(graph)
    elif isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        # (-1 and 0 were priced as 1 sample, 2.5 as 2; "32" failed inside the batch checks)
        raise ValueError(f"rs.check: batch {batch!r} is not a number of samples; use a whole number >= 1, "
                         "or None for the project's training batch_size")
    if device is None:
        device = training_device(graph)
    else:  # ("gpu" was priced as an accelerator: anything but "cpu" was)
        from .device_probe import device_type

        device = device_type(device)
    report = check(graph) if incremental is None else incremental.check(graph)
    report.checked = graph_content(graph)  # (compile refuses the report once the graph is edited)
    key = content_key(graph, default_registry, batch, device, report.checked) if memo is not None else None
    known_derived = memo.get(key) if memo is not None and key is not None else None
    if known_derived is None:
        regions, near, order = _analyze_regions(graph, report)
    else:
        regions, near, order = list(known_derived.regions), list(known_derived.near_misses), known_derived.order
    report.regions = regions
    report.near_misses = near
    known = {(d.node, d.port, d.message) for d in report.diagnostics}
    report.diagnostics.extend(d for d in near if (d.node, d.port, d.message) not in known)
    report.diagnostics.extend(batch_errors(graph, report, batch))  # what a training step cannot run
    report.diagnostics.extend(mixed_dtype_warnings(graph))
    sizes = None
    try:  # sizes no device holds: a warning naming the node and the bytes, before anyone allocates
        sizes = measure(graph, report)
        report.diagnostics.extend(size_warnings(graph, report, input_dtype(graph), sizes))
    except Exception as exc:
        report.diagnostics.append(warning(None, f"the size check failed ({type(exc).__name__}: {exc}); "
                                                "please report this"))
    if sizes is not None and sizes.layers > LAYER_LIMIT:
        # The estimate simulates the step layer by layer, every copy of every Repeat: minutes for
        # such a graph (a Repeat of a Repeat), on every edit in the editor. Its warning says so.
        report.estimate = None
        return report, None
    if known_derived is not None:
        report.estimate = known_derived.estimate
        if known_derived.estimate_error is not None:
            report.diagnostics.append(known_derived.estimate_error)
        return report, None

    return report, EstimateRest(graph, report, regions, near, order, batch, device, memo, key)


@dataclass
class EstimateResult:
    """What :meth:`EstimateRest.compute` made: the estimate (None when it failed) and the warning
    it failed with."""

    estimate: Any
    failed: Diagnostic | None


class EstimateRest:
    """The second part of :func:`check_in_two`: the memory estimate of the checked graph.

    ``compute(graph)`` makes it (its peaks and facts walked when ``walk``) and changes nothing:
    it reads ``graph``, the report's shapes and regions and the node registry, so the editor runs
    it on a worker thread with ``graph`` a copy of the checked state (``Graph.copy()``).
    ``apply(result)`` fills the report in and keeps the result in the memo; ``rest()`` does both
    on the checked graph itself.
    """

    def __init__(self, graph: Graph, report: Report, regions: list[Any], near: list[Diagnostic],
                 order: list[str] | None, batch: int, device: Any, memo: AnalysisMemo | None,
                 key: tuple[Any, ...] | None) -> None:
        self.graph, self.report, self.regions, self.near, self.order = graph, report, regions, near, order
        self.batch, self.device, self.memo, self.key = batch, device, memo, key

    def __call__(self) -> None:
        result = self.compute(walk=self.memo is not None)
        if result is not None:  # (None only when cancelled, which this call never is)
            self.apply(result)

    def compute(self, graph: Graph | None = None, walk: bool = True,
                cancelled: Callable[[], bool] | None = None) -> EstimateResult | None:
        """The estimate of ``graph`` (default: the graph checked; a copy of that state, never a
        later one), its peaks and facts computed when ``walk``. ``cancelled`` is asked between
        those steps: None is returned once it says True."""
        with paused():  # allocation-heavy and cycle-free (revstudio.core.nogc)
            try:
                est = estimate(graph if graph is not None else self.graph, self.report, self.regions,
                               batch=self.batch, order=self.order, device=self.device)
            except Exception as exc:  # same reasoning: the estimate is advice, never a crash
                return EstimateResult(None, warning(None, f"the memory estimate failed ({type(exc).__name__}: "
                                                          f"{exc}); please report this"))
            for part in ("peaks", "facts") if walk else ():
                if cancelled is not None and cancelled():
                    return None
                getattr(est, part)  # (a failure here propagates, as reading them later would)
            return EstimateResult(est, None)

    def apply(self, result: EstimateResult) -> None:
        """Fill the report in with ``result`` and keep it in the memo (where the graph checked
        still is as it was)."""
        self.report.estimate = result.estimate
        if result.failed is not None:
            self.report.diagnostics.append(result.failed)
        if self.memo is not None and self.key is not None:
            self.memo.put(self.key, Derived(list(self.regions), list(self.near), self.order, result.estimate,
                                            result.failed))
