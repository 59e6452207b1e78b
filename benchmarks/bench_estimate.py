"""Peak estimate vs measured peak: every example project, every mode, batch 1, 16 and 64.

Measured: exact live-tensor accounting on the CPU (or CUDA allocator statistics
with --device cuda) of one training step, as ``revstudio memory`` reports it.
Estimated: ``revstudio.diagnostics.estimate.estimate_peak`` from shapes alone.
Also times the estimate of a 2,000-node RevNet (the editor's live figures):
the kept-activation estimate and the peak walk, medians of interleaved runs.

    python benchmarks/bench_estimate.py                 # markdown tables
    python benchmarks/bench_estimate.py --batches 16 --device cuda
    python benchmarks/bench_estimate.py --batches 32 --precision bf16   # measured under autocast

``--precision bf16`` (or fp16 on CUDA) measures each step's forward under autocast, as
``revstudio train --precision`` runs it, beside the same (fp32) estimate: the estimate does
not model autocast, and a run at those precisions draws no estimate; this shows by how much
it would miss.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from revstudio.core.generate import revnet_chain  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.diagnostics.estimate import MODES, estimate, estimate_peak  # noqa: E402

TARGET = 0.15


def errors(batches: list[int], device_name: str,
           precision: str = "fp32") -> list[tuple[str, int, str, int, int, float]]:
    import torch

    from revstudio.compiler import compile as compile_graph
    from revstudio.diagnostics.estimate import input_dtype
    from revstudio.diagnostics.gradcheck import random_inputs, torch_dtype
    from revstudio.diagnostics.memory import Autocast, compare_modes

    device = torch.device(device_name)
    rows = []
    for path in sorted((ROOT / "resources" / "examples").glob("*.revs")):
        graph = load(path)
        report = full_check(graph)
        dtype = torch_dtype(input_dtype(graph))
        torch.manual_seed(0)
        model = compile_graph(graph, mode="standard", device=device, dtype=dtype)
        model.train()
        measured_model = model if precision == "fp32" else Autocast(model, device.type, precision)
        for batch in batches:
            inputs = random_inputs(graph, batch, dtype, 0, device, requires_grad=False)
            if hasattr(model, "initialize"):
                model.initialize(*inputs)
            measured = compare_modes(measured_model, inputs, MODES)
            for mode in MODES:
                real = measured[mode]["peak_bytes"]
                est = estimate_peak(graph, report, batch=batch, mode=mode, device=device.type)
                rows.append((path.stem, batch, mode, real, est, est / real - 1))
    return rows


def timings(blocks: int, runs: int) -> tuple[int, dict[str, float]]:
    """Medians of ``runs`` interleaved estimates: wall clock and this process's CPU time
    (on a shared machine the CPU time is the steadier figure: other jobs' load mostly
    shows up as waiting, which only the wall clock counts)."""
    graph = revnet_chain(blocks)
    report = full_check(graph)
    found: dict[str, list[float]] = {k: [] for k in ("kept", "peak", "kept_cpu", "peak_cpu")}
    for _ in range(runs):  # interleaved: machine load hits both alike
        wall, cpu = time.perf_counter(), time.process_time()
        estimate(graph, report, report.regions, batch=32)
        found["kept"].append(time.perf_counter() - wall)
        found["kept_cpu"].append(time.process_time() - cpu)
        wall, cpu = time.perf_counter(), time.process_time()
        est = estimate(graph, report, report.regions, batch=32)
        est.peak_bytes("standard")
        found["peak"].append(time.perf_counter() - wall)
        found["peak_cpu"].append(time.process_time() - cpu)
    return len(graph.nodes), {k: statistics.median(v) for k, v in found.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="fp32",
                        help="measure under autocast (the estimate stays fp32's)")
    parser.add_argument("--runs", type=int, default=7, help="timed estimates (median)")
    parser.add_argument("--timing-only", action="store_true", help="only time the 2,000-node estimate")
    args = parser.parse_args(argv)
    if args.timing_only:
        _print_timings(args.runs)
        return 0
    import torch

    torch.set_num_threads(args.threads)
    rows = errors(args.batches, args.device, args.precision)
    print(f"peak of one training step, {args.device}, {args.precision}: estimated vs measured "
          f"({'allocator statistics' if args.device.startswith('cuda') else 'live tensor accounting'})")
    print()
    print("| project | batch | mode | measured | estimated | error |")
    print("|---|---|---|---|---|---|")
    for name, batch, mode, real, est, err in rows:
        flag = "" if abs(err) <= TARGET else " **"
        print(f"| {name} | {batch} | {mode} | {real:,} | {est:,} | {err:+.1%}{flag} |")
    within = sum(abs(r[-1]) <= TARGET for r in rows)
    print(f"\n{within} of {len(rows)} within {TARGET:.0%}; worst {max(abs(r[-1]) for r in rows):.1%} "
          "(** marks a miss)")
    print()
    _print_timings(args.runs)
    return 0


def _print_timings(runs: int) -> None:
    nodes, t = timings(200, runs)
    print(f"estimate of a {nodes}-node RevNet at batch 32 (median of {runs}): kept activations "
          f"{t['kept'] * 1000:.0f} ms ({t['kept_cpu'] * 1000:.0f} ms CPU); with the peak walk "
          f"{t['peak'] * 1000:.0f} ms ({t['peak_cpu'] * 1000:.0f} ms CPU) (target < 100 ms)")


if __name__ == "__main__":
    sys.exit(main())
