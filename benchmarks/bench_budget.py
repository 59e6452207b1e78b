"""Memory budget: with half of standard mode's activations as the budget, what is kept and how fast.

For each RevNet (the bench_revnet network, compiled by revstudio): measured
bytes kept after forward (and the step's peak) in standard and reversible mode and
under ``model.memory_budget = standard kept / 2`` (exact live-tensor accounting),
and the fwd+bwd CPU time of the three, interleaved. Target (issue 13): at most
the budget is kept beyond reversible mode's own, and the step is faster than
reversible by at least half of the reversible-standard difference.

    python benchmarks/bench_budget.py --threads 1
    python benchmarks/bench_budget.py --quick
    python benchmarks/bench_budget.py --cells 3x32x16x8 4x32x32x8
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

import revnet_models as rm  # noqa: E402

from revstudio.diagnostics.memory import measure_step  # noqa: E402

CELLS = [(8, 32, 16, 16), (16, 16, 16, 16), (32, 32, 16, 16), (4, 32, 32, 8), (3, 32, 16, 8), (64, 16, 64, 16)]
QUICK = [(4, 8, 8, 8), (8, 4, 8, 8)]


def measure(depth: int, batch: int, channels: int, size: int, runs: int) -> dict[str, float]:
    model, _ = rm.revstudio_model(rm.make_functions(depth, channels), channels, size)
    model.train()
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
    kept_steps = sum(model._root.kept_steps(batch).values())
    total = sum(len(c) for c in model._root.step_costs.values())
    return {"budget": budget, **{f"kept_{k}": v for k, v in kept.items()}, **{f"s_{k}": v for k, v in t.items()},
            **{f"peak_{k}": v for k, v in peak.items()},
            "gain": (t["reversible"] - t["budget"]) / (t["reversible"] - t["standard"]),
            "steps": f"{kept_steps}/{total}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int, default=None, help="interleaved timed runs (default 11; quick 3)")
    parser.add_argument("--threads", type=int, default=None)
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
    runs = args.runs or (3 if args.quick else 11)
    print(f"{torch.get_num_threads()} threads, CPU time, median of {runs} interleaved runs; KiB = 1024 bytes")
    print("| depth x batch x ch x size | standard kept | reversible kept | budget | kept under budget | "
          "beyond reversible | steps kept | peak std / rev / budget | std / rev / budget ms | gain (target >= 0.50) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for cell in cells or (QUICK if args.quick else CELLS):
        r = measure(*cell, runs)
        beyond = r["kept_budget"] - r["kept_reversible"]
        ok = "ok" if beyond <= r["budget"] else "OVER"
        print(f"| {'x'.join(map(str, cell))} | {r['kept_standard'] / 1024:.0f} | {r['kept_reversible'] / 1024:.0f} | "
              f"{r['budget'] / 1024:.0f} | {r['kept_budget'] / 1024:.0f} | {beyond / 1024:.0f} ({ok}) | {r['steps']} | "
              f"{r['peak_standard'] / 1024:.0f} / {r['peak_reversible'] / 1024:.0f} / {r['peak_budget'] / 1024:.0f} | "
              f"{1e3 * r['s_standard']:.1f} / {1e3 * r['s_reversible']:.1f} / {1e3 * r['s_budget']:.1f} | "
              f"{r['gain']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
