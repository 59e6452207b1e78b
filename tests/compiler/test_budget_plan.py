"""A larger memory budget keeps everything a smaller one keeps, region by region, and only
steps that save a rebuild count as kept (torch-free: the choice the badges, the CLI and the
runtime share).

Kept steps are a prefix of each region, so "the kept set at B is a subset of the kept set at
B' > B" is the same as "no region's count falls": the tests check the counts.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from revstudio.compiler.budget import kept_plan, prefix_cost, select_kept
from revstudio.core.generate import Builder, classifier_head, random_graph, wired_block
from revstudio.core.graph import Graph
from revstudio.core.project import load
from revstudio.diagnostics.budget import budget_choice, step_prices, step_worth
from revstudio.diagnostics.check import full_check

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def _two_regions(channels: int, first: int = 3, second: int = 3) -> Graph:
    b = Builder("two-regions")
    b.node("Input", "x", shape=[8, 8, 8])
    src = "x.out"
    for i in range(first):
        src = wired_block(b, src, f"a{i}", 8)
    b.node("Conv", "mid", out_channels=channels, kernel_size=3, padding="same")
    b.wire(src, "mid")
    src = "mid.out"
    for i in range(second):
        src = wired_block(b, src, f"c{i}", channels)
    classifier_head(b, src, 10)
    return b.done()


def test_no_regions_steps_fall_as_the_budget_grows_in_a_small_case() -> None:
    """Region a whole costs 8 (its cut after the first step 6): the cheapest most steps kept
    b's step at 5 and gave it up at 8 for the whole of a. Now b's step stays (8 keeps one
    step where two would fit: the price of never taking a step back)."""
    costs, refunds = {"a": [6, 6], "b": [5]}, {"a": [0, 0, 4]}
    seen = [select_kept(costs, budget, refunds) for budget in range(0, 20)]
    for before, after in zip(seen, seen[1:]):
        assert all(after[r] >= before[r] for r in costs), (before, after)
    assert seen[5] == seen[8] == {"a": 0, "b": 1} and seen[11] == {"a": 1, "b": 1} and seen[13] == {"a": 2, "b": 1}
    # the plan's prices never fall, and each budget keeps the longest part of it that fits
    plan = kept_plan(costs, refunds)
    assert plan == [(5, "b", 1), (11, "a", 1), (13, "a", 2)]
    for budget, kept in enumerate(seen):
        assert sum(prefix_cost(costs[r], refunds[r] if r in refunds else None, kept[r]) for r in costs) <= budget


GRAPHS = {"two-regions": lambda: _two_regions(8), "two-regions-wider": lambda: _two_regions(16, 2, 5),
          "random-0": lambda: random_graph(0), "random-2": lambda: random_graph(2),
          "random-47": lambda: random_graph(47), "digits": lambda: load(EXAMPLES / "digits_revnet.revs")}


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("batch", [1, 8])
def test_more_budget_keeps_every_step_less_budget_keeps(name: str, batch: int) -> None:
    """At every price of every cut and at 300 budgets between, no region's kept steps fall (two
    regions of 8 channels at batch 8: 49,128 B kept 6 steps of the first, 49,680 B 3 of it and 2
    of the second; random network 0 at batch 1: 62 B kept a step of region n1, 88 B none)."""
    graph = GRAPHS[name]()
    report = full_check(graph, batch=batch)
    costs, refunds, fixed = step_prices(graph, report, batch=batch)
    assert costs
    top = sum(map(sum, costs.values())) + sum(max(f) for f in fixed.values()) + 1
    budgets = set(range(0, top, max(1, top // 300)))
    budgets |= {prefix_cost(c, refunds[r], k, fixed[r]) + d for r, c in costs.items()
                for k in range(len(c) + 1) for d in (-1, 0, 1)}
    before: dict[str, int] | None = None
    for budget in sorted(b for b in budgets if b >= 0):
        choice = budget_choice(graph, report, budget, batch=batch)
        kept = {rid: c.kept_steps for rid, c in choice.regions.items()}
        assert choice.kept_bytes <= budget
        if before is not None:
            assert all(kept[r] >= before[r] for r in kept), (budget, before, kept)
        before = kept
    assert before == {rid: len(c) for rid, c in costs.items()}  # enough keeps everything


def test_a_split_alone_is_not_kept() -> None:
    """revnet_wired at batch 4: a quarter of standard mode's kept bytes kept the region's first
    Split alone ("partly kept", "first 1/8 steps kept", 36,864 B: the region's input held alive),
    which saves no rebuild. Now that budget keeps nothing, and what is kept is counted in the
    steps that save a rebuild (its four couplings), not in Splits and Concats."""
    graph = load(EXAMPLES / "revnet_wired.revs")
    report = full_check(graph, batch=4)
    (rid,) = [r.id for r in report.regions]
    quarter = budget_choice(graph, report, 36936, batch=4)
    assert quarter.regions[rid].kept_steps == 0 and quarter.kept_bytes == 0 and quarter.badge(rid) == ""
    assert step_worth(graph, report.regions)[rid] == [False, True, True, False, False, True, True, False]
    # 48 %: the Split and both couplings of the first block
    some = budget_choice(graph, report, 70920, batch=4)
    r = some.regions[rid]
    assert (r.kept_steps, r.steps, r.kept_compute_steps, r.compute_steps) == (3, 8, 2, 4)
    assert some.badge(rid) == "first 2/4 steps kept"
    row = some.to_json()["regions"][0]
    assert row["kept_compute_steps"] == 2 and row["compute_steps"] == 4 and row["kept_steps"] == 3
    assert "2/4 first steps" in some.summary_lines()[1]
    # a budget of any cut's price never keeps a cut that ends in a step saving no rebuild
    costs, refunds, fixed = step_prices(graph, report, batch=4)
    worth = step_worth(graph, report.regions)[rid]
    for k in range(len(costs[rid]) + 1):
        kept = budget_choice(graph, report, prefix_cost(costs[rid], refunds[rid], k, fixed[rid]), batch=4)
        n = kept.regions[rid].kept_steps
        assert n == 0 or n == len(worth) or worth[n - 1], (k, n)
