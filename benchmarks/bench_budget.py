"""Memory budget: with half of standard mode's activations as the budget, what is kept and how fast.

For each RevNet (the bench_revnet network, compiled by revstudio): measured
bytes kept after forward (and the step's peak) in standard and reversible mode and
under ``model.memory_budget = standard kept / 2`` (exact live-tensor accounting),
and the fwd+bwd CPU time of the three, interleaved; and the static estimate of the
peak under the budget (``diagnostics.budget.budget_peak``, what a training run plots
as its estimate). Target (issue 13): at most the budget is kept beyond reversible
mode's own, and the step is faster than reversible by at least half of the
reversible-standard difference. ``--estimates``: no timing; the measured and
estimated peak at budgets of 0, 1/4, 1/2, 3/4 and 3/2 of standard mode's kept bytes;
``--examples``: the same for every example project with a region, at batches 1, 8 and 32;
``--random N``: every cut of random networks 0..N-1 (``random_revnets.py``, networks no rule
was tuned on): the budget that keeps each number of first steps, the estimated and measured
peak, and the bytes kept beyond reversible mode's against the budget.

    python benchmarks/bench_budget.py --threads 1
    python benchmarks/bench_budget.py --quick
    python benchmarks/bench_budget.py --cells 3x32x16x8 4x32x32x8
    python benchmarks/bench_budget.py --threads 1 --run-steps     # steps as a training run takes them
    python benchmarks/bench_budget.py --estimates
    python benchmarks/bench_budget.py --examples
    python benchmarks/bench_budget.py --random 30 --batch 8          # seeds 0-29 (--first S)
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
ROOT = Path(__file__).resolve().parent.parent

import revnet_models as rm  # noqa: E402

from revstudio.diagnostics.budget import budget_peak  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.diagnostics.memory import measure_step  # noqa: E402

CELLS = [(8, 32, 16, 16), (16, 16, 16, 16), (32, 32, 16, 16), (4, 32, 32, 8), (3, 32, 16, 8), (64, 16, 64, 16)]
QUICK = [(4, 8, 8, 8), (8, 4, 8, 8)]


def measure(depth: int, batch: int, channels: int, size: int, runs: int, track: bool = True) -> dict[str, float]:
    model, _ = rm.revstudio_model(rm.make_functions(depth, channels), channels, size)
    model.train()
    model.track_inversion = track
    x = torch.randn(batch, channels, size, size)
    settings = {"standard": ("standard", None), "reversible": ("reversible", None)}
    model.mode = "standard"
    first = measure_step(model, (x,), timing_runs=0)
    kept, peak = {"standard": first["kept_bytes"]}, {"standard": first["peak_bytes"]}
    budget = kept["standard"] // 2
    settings["budget"] = ("reversible", budget)
    for name, (mode, limit) in settings.items():
        model.mode, model.memory_budget = mode, limit
        got = measure_step(model, (x,), timing_runs=0)
        kept[name], peak[name] = got["kept_bytes"], got["peak_bytes"]
    times: dict[str, list[float]] = {name: [] for name in settings}

    def step() -> None:
        model.zero_grad(set_to_none=True)
        (model(x) ** 2).mean().backward()

    for _ in range(runs):
        for name, (mode, limit) in settings.items():
            model.mode, model.memory_budget = mode, limit
            start = time.thread_time()
            step()
            times[name].append(time.thread_time() - start)
    t = {name: statistics.median(v) for name, v in times.items()}
    graph = rm.revstudio_graph(depth, channels, size)
    estimated = budget_peak(graph, full_check(graph, batch=batch), budget, batch=batch)
    kept_steps = sum(model._root.kept_steps(batch).values())
    total = sum(len(c) for c in model._root.step_costs.values())
    return {"budget": budget, **{f"kept_{k}": v for k, v in kept.items()}, **{f"s_{k}": v for k, v in t.items()},
            **{f"peak_{k}": v for k, v in peak.items()},
            "gain": (t["reversible"] - t["budget"]) / (t["reversible"] - t["standard"]), "estimate_budget": estimated,
            "steps": f"{kept_steps}/{total}"}


FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.5)


def estimates(cells: list[tuple[int, int, int, int]]) -> None:
    """Measured and estimated peak under budgets of FRACTIONS of standard mode's kept bytes."""
    print("| depth x batch x ch x size | budget (x standard kept) | steps kept | measured peak KiB | "
          "estimate KiB | estimate / measured |")
    print("|---|---|---|---|---|---|")
    worst = []
    for depth, batch, channels, size in cells:
        model, _ = rm.revstudio_model(rm.make_functions(depth, channels), channels, size)
        model.train()
        graph = rm.revstudio_graph(depth, channels, size)
        report = full_check(graph, batch=batch)
        x = torch.randn(batch, channels, size, size)
        model.mode = "standard"
        standard_kept = measure_step(model, (x,), timing_runs=0)["kept_bytes"]
        for frac in FRACTIONS:
            budget = int(standard_kept * frac)
            model.mode, model.memory_budget = "reversible", budget
            peak = measure_step(model, (x,), timing_runs=0)["peak_bytes"]
            est = budget_peak(graph, report, budget, batch=batch)
            kept = sum(model._root.kept_steps(batch).values())
            total = sum(len(c) for c in model._root.step_costs.values())
            worst.append(est / peak)
            print(f"| {depth}x{batch}x{channels}x{size} | {frac:.2f} | {kept}/{total} | {peak / 1024:.0f} | "
                  f"{est / 1024:.0f} | {est / peak:.3f} |", flush=True)
    print(f"estimate / measured: {min(worst):.3f} to {max(worst):.3f}")


def example_estimates() -> None:
    """Estimated over measured peak under budgets of FRACTIONS of standard's kept bytes, per example."""
    from revstudio.clicmd.memory import measure_modes
    from revstudio.core.project import load
    from revstudio.diagnostics.budget import budget_choice

    cpu = torch.device("cpu")
    print("| example | batch | estimate / measured peak at 0, 1/4, 1/2, 3/4, 3/2 x standard kept (steps kept) |")
    print("|---|---|---|")
    ratios = []
    for path in sorted((ROOT / "resources" / "examples").glob("*.revs")):
        graph = load(path)
        for batch in (1, 8, 32):
            report = full_check(graph, batch=batch)
            if not report.regions:
                break
            kept = measure_modes(graph, batch, cpu)["standard"]["kept_bytes"]
            cells = []
            for frac in FRACTIONS:
                budget = int(kept * frac)
                peak = measure_modes(graph, batch, cpu, budget=budget)["budget"]["peak_bytes"]
                ratio = budget_peak(graph, report, budget, batch=batch) / peak
                steps = [c.kept_steps for c in budget_choice(graph, report, budget, batch=batch).regions.values()]
                ratios.append(ratio)
                cells.append(f"{ratio:.3f} ({'/'.join(map(str, steps))})")
            print(f"| {path.stem} | {batch} | {', '.join(cells)} |", flush=True)
    print(f"estimate / measured: {min(ratios):.3f} to {max(ratios):.3f}")


def random_cuts(seeds: range, batch: int, only: set[int] | None = None,
                family: str = "image") -> list[tuple[int, str, int, int, int, int, int, int]]:
    """Per random network with one region and per cut: (seed, region, steps kept, budget,
    measured peak, estimated peak, bytes kept beyond reversible mode's, steps in the region).
    The budget of a cut is its price (``compiler.budget.prefix_cost``), where a cheaper cut
    keeping more steps may win it; ``only``: the cuts (steps kept) to measure, else all;
    ``family``: ``random_revnets.FAMILIES``' key."""
    from random_revnets import FAMILIES

    from revstudio.clicmd.memory import measure_modes
    from revstudio.compiler.budget import prefix_cost
    from revstudio.diagnostics.budget import budget_choice
    from revstudio.diagnostics.budget_prices import step_prices

    cpu = torch.device("cpu")
    out = []
    for seed in seeds:
        graph = FAMILIES[family](seed)
        report = full_check(graph, batch=batch)
        if len(report.regions) != 1:
            continue  # (one budget serves every region: a cut of one is a choice of them all)
        costs, refunds, fixed = step_prices(graph, report, batch=batch)
        ((rid, steps),) = costs.items()
        base = measure_modes(graph, batch, cpu)["reversible"]["kept_bytes"]
        seen = set()
        for n in range(len(steps) + 1):
            budget = prefix_cost(steps, refunds[rid], n, fixed[rid])
            kept = budget_choice(graph, report, budget, batch=batch).regions[rid].kept_steps
            if kept in seen or (only is not None and kept not in only):
                continue
            seen.add(kept)
            got = measure_modes(graph, batch, cpu, budget=budget)["budget"]
            out.append((seed, rid, kept, budget, got["peak_bytes"], budget_peak(graph, report, budget, batch=batch),
                        got["kept_bytes"] - base, len(steps)))
    return out


def random_estimates(seeds: range, batch: int, family: str = "image") -> None:
    """Estimated over measured peak at every cut of random networks with one region."""
    print(f"random {family} networks {seeds.start}-{seeds.stop - 1}, batch {batch}: every cut of the region (steps "
          "kept), estimated vs measured peak, kept beyond reversible mode's vs the budget")
    print("| seed | cut | budget | measured peak | estimate | error | kept beyond reversible |")
    print("|---|---|---|---|---|---|---|")
    errs = []
    for seed, _rid, kept, budget, peak, est, beyond, steps in random_cuts(seeds, batch, family=family):
        errs.append(est / peak - 1)
        ok = "ok" if beyond <= budget else "OVER"
        print(f"| {seed} | {kept}/{steps} | {budget:,} | {peak:,} | {est:,} | {est / peak - 1:+.2%} | "
              f"{beyond:,} ({ok}) |", flush=True)
    within = sum(abs(e) <= 0.005 for e in errs)
    print(f"{len(errs)} cuts: {within} within 0.5 %, median {statistics.median(errs):+.2%}, "
          f"lowest {min(errs):+.2%}, highest {max(errs):+.2%}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int, default=None, help="interleaved timed runs (default 11; quick 3)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--estimates", action="store_true", help="no timing: the peak estimate at five budgets")
    parser.add_argument("--examples", action="store_true", help="no timing: the same for the example projects")
    parser.add_argument("--random", type=int, default=0, metavar="N",
                        help="no timing: every cut of random networks 0..N-1")
    parser.add_argument("--first", type=int, default=0, help="the first seed of --random (default 0)")
    parser.add_argument("--batch", type=int, default=8, help="the batch of --random (default 8)")
    parser.add_argument("--family", choices=("image", "seq"), default="image",
                        help="the random networks of --random: image classifiers or sequence models")
    parser.add_argument("--run-steps", action="store_true",
                        help="steps as `revstudio train` takes them: measuring no inversion error "
                             "(track_inversion off; a model measures it every step by default)")
    parser.add_argument("--cells", nargs="+", default=None, metavar="DxBxCxS",
                        help="cells to run instead of the grid, e.g. 3x32x16x8")
    args = parser.parse_args(argv)
    try:
        cells = [tuple(int(v) for v in c.split("x")) for c in args.cells] if args.cells else None
    except ValueError:
        parser.error("--cells takes DEPTHxBATCHxCHANNELSxSIZE, e.g. 3x32x16x8")
    if cells and any(len(c) != 4 or min(c) < 1 for c in cells):
        parser.error("--cells takes four positive numbers per cell, e.g. 3x32x16x8")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.examples:
        example_estimates()
        return 0
    if args.random:
        random_estimates(range(args.first, args.first + args.random), args.batch, args.family)
        return 0
    if args.estimates:
        estimates(cells or (QUICK if args.quick else CELLS))
        return 0
    runs = args.runs or (3 if args.quick else 11)
    print(f"{torch.get_num_threads()} threads, CPU time, median of {runs} interleaved runs; KiB = 1024 bytes"
          + ("; steps as a run takes them (no inversion error measured)" if args.run_steps else ""))
    print("| depth x batch x ch x size | standard kept | reversible kept | budget | kept under budget | "
          "beyond reversible | steps kept | peak std / rev / budget | budget peak estimate | std / rev / budget ms | gain (target >= 0.50) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for cell in cells or (QUICK if args.quick else CELLS):
        r = measure(*cell, runs, track=not args.run_steps)
        beyond = r["kept_budget"] - r["kept_reversible"]
        ok = "ok" if beyond <= r["budget"] else "OVER"
        print(f"| {'x'.join(map(str, cell))} | {r['kept_standard'] / 1024:.0f} | {r['kept_reversible'] / 1024:.0f} | "
              f"{r['budget'] / 1024:.0f} | {r['kept_budget'] / 1024:.0f} | {beyond / 1024:.0f} ({ok}) | {r['steps']} | "
              f"{r['peak_standard'] / 1024:.0f} / {r['peak_reversible'] / 1024:.0f} / {r['peak_budget'] / 1024:.0f} | "
              f"{r['estimate_budget'] / 1024:.0f} ({r['estimate_budget'] / r['peak_budget']:.3f}x) | "
              f"{1e3 * r['s_standard']:.1f} / {1e3 * r['s_reversible']:.1f} / {1e3 * r['s_budget']:.1f} | "
              f"{r['gain']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
