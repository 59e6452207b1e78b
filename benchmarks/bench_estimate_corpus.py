"""Every figure of the estimate's corpus against its measured peak, in one command.

The corpus est12-est14 held the estimate to: image networks 0-59, sequence and skip models 0-99
at batches 1 and 8, skip models 100-399 at 1, 2, 8 and 32, every example, the six skip variants
of ``bench_estimate_skips.py`` and the two multi-scale flows at 1, 2, 8, 16, 32 and 64, every mode
(5,430 figures); and ``budget_peak`` of skip 0-99, image 0-59 and sequence 0-29 at 1 and 8 under
budgets of 0, 64 KiB and 1 MiB (1,140). Measuring it all takes hours on the CPU, so the measured
peaks go to a cache (one JSON line per graph and batch, appended as each is done: stop and run it
again to go on; ``--shard i/n`` splits the work between processes). The runtime's peaks do not
change with the estimate, so ``--estimate-only`` takes the measured peaks from the cache and
estimates afresh (seconds), and ``--against`` names a cache of an earlier tree's estimates whose
figures that moved are listed.

    OMP_NUM_THREADS=1 python benchmarks/bench_estimate_corpus.py --cache /tmp/corpus.jsonl
    python benchmarks/bench_estimate_corpus.py --cache /tmp/corpus.jsonl --estimate-only \\
        --save /tmp/after.json --against /tmp/before.json

Prints the count of figures per error band and the worst under- and over-estimates by name.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_estimate_skips import VARIANTS, seeded_model, variant  # noqa: E402
from random_revnets import random_revnet, random_seqnet, random_skipnet  # noqa: E402

BUDGETS = (0, 1 << 16, 1 << 20)
WIDE = (1, 2, 8, 16, 32, 64)
SKIP_VARIANTS = [*VARIANTS, ("revnet_wired", "stem.out", "block1_cat.out", "sub")]
# (lower bound, label): an error at or above the bound and below the next one's
BANDS = ((-1e9, "under by more than 1 %"), (-0.01, "under by 0.07-1 %"), (-0.0007, "within 0.07 %"),
         (0.0007, "over by 0.07-1 %"), (0.01, "over by more than 1 %"))


def jobs() -> Iterator[tuple[str, str, int]]:
    """(kind, graph name, batch): kind "modes" measures every mode, "budgets" the three budgets."""
    for seed in range(60):
        for batch in (1, 8):
            yield "modes", f"image {seed}", batch
    for seed in range(100):
        for batch in (1, 8):
            yield "modes", f"seq {seed}", batch
            yield "modes", f"skip {seed}", batch
    for seed in range(100, 400):
        for batch in (1, 2, 8, 32):
            yield "modes", f"skip {seed}", batch
    from revstudio.core.examples import example_projects

    for name in dict(example_projects()):
        for batch in WIDE:
            yield "modes", f"example {name}", batch
    for number in range(len(SKIP_VARIANTS)):
        for batch in WIDE:
            yield "modes", f"variant {number}", batch
    for kind in ("affine", "additive"):
        for batch in WIDE:
            yield "modes", f"multi-scale {kind}", batch
    for family, count in (("skip", 100), ("image", 60), ("seq", 30)):
        for seed in range(count):
            for batch in (1, 8):
                yield "budgets", f"{family} {seed}", batch


def graph_of(name: str, folder: Path) -> Any:
    family, key = name.split(" ", 1)
    makers: dict[str, Callable[[int], Any]] = {"image": random_revnet, "seq": random_seqnet, "skip": random_skipnet}
    if family in makers:
        return makers[family](int(key))
    if family == "example":
        from revstudio.core.examples import example_projects

        return dict(example_projects())[key]
    if family == "variant":
        from revstudio.core.project import load

        return load(variant(folder, *SKIP_VARIANTS[int(key)]))
    sys.path.insert(0, str(ROOT / "tests" / "diagnostics"))
    from test_multiscale_kept import multi_scale

    return multi_scale(key)


def figure_names(kind: str, name: str, batch: int) -> list[str]:
    from revstudio.diagnostics.estimate import MODES

    if kind == "modes":
        return [f"{name} b{batch} {mode}" for mode in MODES]
    return [f"{name} b{batch} budget {budget >> 10} KiB" for budget in BUDGETS]


def estimates(kind: str, graph: Any, batch: int) -> list[int]:
    from revstudio.diagnostics.budget import budget_peak
    from revstudio.diagnostics.check import full_check
    from revstudio.diagnostics.estimate import MODES, estimate_peak

    report = full_check(graph, batch=batch)
    if kind == "modes":
        return [estimate_peak(graph, report, batch=batch, mode=mode) for mode in MODES]
    return [budget_peak(graph, report, budget, batch=batch) for budget in BUDGETS]


def measured(kind: str, graph: Any, batch: int) -> list[int]:
    """The measured peaks, one training step each on the CPU (live-tensor accounting), one set of
    weights per graph (seed 0), initialised on the inputs as the skip tests do."""
    from revstudio.diagnostics.estimate import MODES
    from revstudio.diagnostics.memory import measure_step

    model, inputs = seeded_model(graph, batch)
    found = []
    for setting in (MODES if kind == "modes" else BUDGETS):
        if kind == "modes":
            model.mode = setting
        else:
            model.mode, model.memory_budget = "reversible", setting
        found.append(int(measure_step(model, inputs, timing_runs=0)["peak_bytes"]))
    return found


def _cached(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                out.update(json.loads(line))
    return out


def measure_all(cache: Path, shard: tuple[int, int], limit: int | None) -> None:
    import torch

    torch.set_num_threads(1)
    done = _cached(cache)
    todo = [job for i, job in enumerate(jobs()) if i % shard[1] == shard[0]
            and not all(n in done for n in figure_names(*job))]
    print(f"{len(todo)} graphs and batches to measure", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (kind, name, batch) in enumerate(todo[:limit]):
            peaks = measured(kind, graph_of(name, Path(tmp)), batch)
            with cache.open("a") as f:
                f.write(json.dumps(dict(zip(figure_names(kind, name, batch), peaks, strict=True))) + "\n")
            if i % 50 == 0:
                print(f"{i} / {len(todo)}: {name} batch {batch}", flush=True)


def estimate_all(names: set[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, name, batch in jobs():
            figures = figure_names(kind, name, batch)
            if any(n in names for n in figures):
                out.update(zip(figures, estimates(kind, graph_of(name, Path(tmp)), batch), strict=True))
    return out


def band(error: float) -> str:
    return [label for bound, label in BANDS if error >= bound][-1]


def table(real: dict[str, int], est: dict[str, int], worst: int) -> list[str]:
    errors = {n: est[n] / real[n] - 1 for n in est if n in real}
    lines = [f"{len(errors):,} figures ({sum('budget' in n for n in errors):,} of them budget peaks)", "",
             "| error | figures | budget peaks |", "|---|---|---|"]
    for _, label in BANDS:
        mine = [n for n, e in errors.items() if band(e) == label]
        lines.append(f"| {label} | {sum('budget' not in n for n in mine):,} | {sum('budget' in n for n in mine):,} |")
    ranked = sorted(errors, key=errors.__getitem__)
    for title, names in ((f"{worst} worst under-estimates", ranked[:worst]),
                         (f"{worst} worst over-estimates", ranked[::-1][:worst])):
        lines += ["", f"| {title} | measured | estimated | error |", "|---|---|---|---|"]
        lines += [f"| {n} | {real[n]:,} | {est[n]:,} | {errors[n]:+.2%} |" for n in names]
    return lines


def moved(real: dict[str, int], est: dict[str, int], before: dict[str, int]) -> list[str]:
    names = [n for n in est if n in before and before[n] != est[n]]
    nearer = sum(abs(est[n] - real[n]) < abs(before[n] - real[n]) for n in names if n in real)
    lines = ["", f"{len(names)} figures moved, {nearer} of them nearer to measured", "",
             "| figure | measured | before | after |", "|---|---|---|---|"]
    for n in sorted(names, key=lambda n: abs(est[n] - before[n]) / real.get(n, 1), reverse=True):
        r = real.get(n, 0)
        lines.append(f"| {n} | {r:,} | {before[n] / r - 1:+.2%} | {est[n] / r - 1:+.2%} |" if r
                     else f"| {n} | not measured | {before[n]:,} | {est[n]:,} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True, help="the measured peaks (JSON lines, appended)")
    parser.add_argument("--shard", default="0/1", help="i/n: measure every n-th graph and batch from the i-th")
    parser.add_argument("--limit", type=int, help="measure at most this many graphs and batches, then stop")
    parser.add_argument("--estimate-only", action="store_true", help="measure nothing: the cache's figures only")
    parser.add_argument("--save", type=Path, help="write the estimates (JSON) here")
    parser.add_argument("--against", type=Path, help="an earlier --save: list the figures that moved")
    parser.add_argument("--worst", type=int, default=20)
    args = parser.parse_args(argv)
    if not args.estimate_only:
        i, n = map(int, args.shard.split("/"))
        measure_all(args.cache, (i, n), args.limit)
    real = _cached(args.cache)
    est = estimate_all(set(real))
    if args.save:
        args.save.write_text(json.dumps(est, indent=0, sort_keys=True) + "\n")
    lines = table(real, est, args.worst)
    if args.against:
        lines += moved(real, est, json.loads(args.against.read_text()))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
