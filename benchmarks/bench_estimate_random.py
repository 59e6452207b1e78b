"""Peak estimate vs measured peak on random reversible networks (``random_revnets.py``).

The example projects are few and were measured while the estimate was built; this draws
networks of the same kinds (wired and node couplings, Glow steps, Groups, Repeats, F and G
with Norm, Dropout and other activations) that no rule was tuned on. Per seed and mode:
the measured peak of one training step (live-tensor accounting on the CPU, CUDA allocator
statistics with ``--device cuda``), the estimate, the error; then a summary per mode.

    python benchmarks/bench_estimate_random.py                    # seeds 0-29, batch 32
    python benchmarks/bench_estimate_random.py --seeds 100 --batch 8 --device cuda
    python benchmarks/bench_estimate_random.py --family seq --seeds 150 --batch 8   # sequence models
    python benchmarks/bench_estimate_random.py --family skip --seeds 30 --batch 8   # with a skip Merge
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from random_revnets import FAMILIES  # noqa: E402

from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.diagnostics.estimate import MODES, estimate_peak  # noqa: E402

TARGET = 0.15


def rows(seeds: range, batch: int, device_name: str,
         modes: tuple[str, ...] = MODES, family: str = "image") -> list[tuple[int, str, int, int, float]]:
    import torch

    from revstudio.compiler import compile as compile_graph
    from revstudio.diagnostics.gradcheck import random_inputs
    from revstudio.diagnostics.memory import compare_modes

    device = torch.device(device_name)
    out = []
    for seed in seeds:
        graph = FAMILIES[family](seed)
        report = full_check(graph, batch=batch, device=device.type)
        torch.manual_seed(0)
        model = compile_graph(graph, mode="standard", device=device)
        model.train()
        inputs = random_inputs(graph, batch, torch.float32, 0, device, requires_grad=False)
        measured = compare_modes(model, inputs, modes)
        for mode in modes:
            real = measured[mode]["peak_bytes"]
            est = estimate_peak(graph, report, batch=batch, mode=mode, device=device.type)
            out.append((seed, mode, real, est, est / real - 1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30, help="seeds 0..N-1 (default 30)")
    parser.add_argument("--first", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--family", choices=sorted(FAMILIES), default="image",
                        help="image classifiers (random_revnet, the default), sequence models (random_seqnet), or "
                             "image classifiers with a residual skip Merge (random_skipnet)")
    args = parser.parse_args()
    found = rows(range(args.first, args.first + args.seeds), args.batch, args.device, family=args.family)
    print(f"peak of one training step, {args.device}, batch {args.batch}: estimated vs measured\n")
    print("| seed | mode | measured | estimated | error |")
    print("|---|---|---|---|---|")
    for seed, mode, real, est, err in found:
        miss = " **" if abs(err) > TARGET else ""
        print(f"| {seed} | {mode} | {real:,} | {est:,} | {err:+.1%}{miss} |")
    print("\n| mode | within 15% | median | lowest | highest |")
    print("|---|---|---|---|---|")
    for mode in MODES:
        errs = [r[4] for r in found if r[1] == mode]
        within = sum(abs(e) <= TARGET for e in errs)
        print(f"| {mode} | {within} of {len(errs)} | {statistics.median(errs):+.1%} | {min(errs):+.1%} | "
              f"{max(errs):+.1%} |")
    print("\n(** marks a miss; a positive error is an estimate above the measured peak)")


if __name__ == "__main__":
    main()
