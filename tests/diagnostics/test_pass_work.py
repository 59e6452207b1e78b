"""The whole-graph passes an edit re-runs do each per-node piece of work once, not once per
use: counted in calls (never timed) on a generated graph of repeated blocks."""
from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from revstudio.core.check import check
from revstudio.core.generate import large_graph
from revstudio.diagnostics import estimate_walk, peak_units
from revstudio.diagnostics.check import full_check
from revstudio.diagnostics.estimate import estimate


@pytest.fixture(scope="module")
def checked() -> tuple[Any, Any]:
    graph = large_graph(100)
    return graph, full_check(graph, batch=8)


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, calls: Counter[str]) -> None:
    real = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)


def test_a_save_rule_runs_once_per_distinct_layer(checked: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    graph, report = checked
    calls: Counter[str] = Counter()
    counting(monkeypatch, estimate_walk, "apply_rule", calls)
    est = estimate(graph, report, batch=8)
    distinct = {(n.type, repr(graph.nodes[nid].params), repr(tuple(n.inputs.items())), repr(tuple(n.outputs.items())))
                for nid, n in report.nodes.items() if n.type not in ("Input", "GroupInput")}
    assert len(report.nodes) > 100 and len(distinct) < 20
    assert calls["apply_rule"] <= len(distinct)  # was once per node (100 and more)
    assert est.peak_bytes("reversible") > 0


def test_a_layer_s_unit_facts_are_found_once_per_node(checked: tuple[Any, Any],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    graph, report = checked
    calls: Counter[str] = Counter()
    for name in ("forward_work_bytes", "guard_bytes", "output_last"):
        counting(monkeypatch, peak_units, name, calls)
    est = estimate(graph, check(graph), regions=report.regions, batch=8)
    est.peaks  # noqa: B018 - the walk that makes the units
    nodes = len(report.nodes)
    # each was asked once per unit made: a layer of a region's coupling once for its region's
    # step, again in checkpoint mode's recompute, again in standard mode
    assert 0 < calls["forward_work_bytes"] <= nodes
    assert 0 < calls["guard_bytes"] <= nodes and 0 < calls["output_last"] <= nodes


def test_the_region_analysis_reads_ports_once_per_distinct_layer(checked: tuple[Any, Any],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from revstudio.compiler.regions import analyze
    from revstudio.core.graph import Graph

    graph, report = checked
    calls: Counter[str] = Counter()
    counting(monkeypatch, Graph, "ports", calls)
    found = analyze(graph, report)
    distinct = {(n.type, repr(n.params)) for n in graph.nodes.values()}
    assert found.regions and len(distinct) < 20
    assert calls["ports"] <= len(distinct)  # was once per node (104)


def test_a_step_s_own_segments_are_walked_once(checked: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint segment's recompute is walked a second time only for the figure a segment
    inside another's recompute needs (``Unit.work_nested``): never for the step's own segments."""
    from revstudio.diagnostics import peak_recompute

    graph, report = checked
    calls: Counter[str] = Counter()
    counting(monkeypatch, peak_recompute, "simulate", calls)
    counting(monkeypatch, peak_recompute, "recompute_walk", calls)
    est = estimate(graph, check(graph), regions=report.regions, batch=8)
    est.peaks  # noqa: B018 - the walk
    assert calls["recompute_walk"] > 2
    assert calls["simulate"] == calls["recompute_walk"]  # was up to twice as many
