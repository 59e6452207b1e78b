"""The scripting API in a notebook: what a cell shows for the objects it returns, and what a
second run of a cell in the same process finds (DESIGN section 3).

A notebook prints the last value of a cell with ``repr`` (IPython: ``_repr_pretty_``), so the
objects ``rs.check`` returns must print a summary whatever the graph's size, not every node.
"""
from __future__ import annotations

import pytest

import revstudio as rs
from revstudio.core.generate import large_graph


class _Pretty:
    """What IPython's pretty printer hands ``_repr_pretty_``: it collects the text."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def text(self, s: str) -> None:
        self.out.append(s)


@pytest.fixture(scope="module")
def big_report() -> tuple[rs.Graph, object]:
    g = large_graph(1000)
    return g, rs.check(g)


def test_a_thousand_node_report_prints_a_few_lines_not_every_node(big_report) -> None:
    g, report = big_report
    text = repr(report)
    assert len(g.nodes) >= 1000
    assert text.count("\n") < 10 and len(text) < 1000, text[:2000]
    assert text.startswith(f"<Report valid: {len(report.nodes):,} nodes, {report.parameters:,} parameters")
    pretty = _Pretty()
    report._repr_pretty_(pretty, False)
    assert "".join(pretty.out) == text


def test_the_estimate_and_regions_of_a_big_report_print_short(big_report) -> None:
    g, report = big_report
    assert report.estimate is not None and report.regions
    est = repr(report.estimate)
    assert len(est) < 400 and "\n" not in est, est[:2000]
    assert f"batch {report.estimate.batch}" in est and "reversible" in est
    for region in report.regions:
        assert len(repr(region)) < 400 + 40 * (len(region.inputs) + len(region.outputs))
        assert f"{len(region.nodes)} nodes" in repr(region)
    assert repr(g) == f"<Graph {g.name!r}: {len(g.nodes):,} nodes, {len(g.edges):,} edges, {len(g.groups)} groups>"


def test_a_report_with_many_errors_lists_the_first_and_says_how_many_more() -> None:
    g = rs.Graph("broken")
    for i in range(12):
        g.add_node("Conv", f"c{i}", {"out_channels": 4})   # no inputs: an error each
    report = rs.check(g)
    text = repr(report)
    assert text.startswith("<Report INVALID: 12 nodes")
    lines = text.splitlines()
    assert len(lines) == 7 and lines[1].startswith("  error: ")
    assert lines[-1].startswith(f"  ... {len(report.errors) + len(report.warnings) - 5} more in report.errors")
