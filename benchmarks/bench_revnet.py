"""RevNet benchmark: time, measured memory and gradient accuracy of reversible implementations.

N additive-coupling blocks, F and G each Conv3x3 -> ReLU -> Conv3x3 on half the
channels, input B x C x H x W (16 x 64 x 16 x 16 in the published comparisons).
Columns: plain autograd, torch.utils.checkpoint per block, revstudio (compiled
from a generated graph; default streams, and float32 / float64 streams), and
MemCNN / RevLib when installed. Per column: median
fwd+bwd time and its ratio to plain, measured peak and kept-after-forward bytes
(revstudio.diagnostics.memory: allocator statistics on CUDA, exact live-tensor
accounting on CPU), and the gradient error against a float64 plain reference.

    python benchmarks/bench_revnet.py --blocks 4 16 64 --batch 16
    python benchmarks/bench_revnet.py --quick          # seconds: a smoke run
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from revnet_models import (  # noqa: E402
    COLUMNS,
    make_functions,
    memcnn_available,
    plain_model,
    revlib_available,
)

from revstudio.diagnostics.memory import measure_step, time_step  # noqa: E402


def _loss_fn(weight: torch.Tensor):  # type: ignore[no-untyped-def]
    # a fixed random projection: every output element gets its own gradient weight
    return lambda out: (out * weight).sum()


def _grads(params: list[torch.nn.Parameter]) -> torch.Tensor:
    return torch.cat([p.grad.detach().double().flatten() for p in params])


def _reference(functions: list, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """float64 gradients of the plain network: the truth every column is measured against."""
    ref, params = plain_model(functions)
    ref.double().zero_grad(set_to_none=True)
    _loss_fn(weight.double())(ref(x.double())).backward()
    return _grads(params)


def _grad_error(model: torch.nn.Module, params: list, x: torch.Tensor, weight: torch.Tensor,
                ref: torch.Tensor) -> float:
    """|g - g64| / |g64| over all parameters (2-norms, canonical order), one fresh step."""
    model.zero_grad(set_to_none=True)
    _loss_fn(weight)(model(x)).backward()
    return float((_grads(params) - ref).norm() / ref.norm())


def _memory_and_error(model: torch.nn.Module, params: list, x: torch.Tensor, weight: torch.Tensor,
                      ref: torch.Tensor) -> dict[str, Any]:
    loss = _loss_fn(weight)
    # warm-up: first-call costs (allocator growth, lazy init) are not the step's
    time_step(model, (x,), loss, runs=1)
    # exact_resizes: MemCNN frees activations by shrinking storages in place
    mem = measure_step(model, (x,), loss, timing_runs=0, exact_resizes=x.device.type == "cpu")
    return {"peak_bytes": mem["peak_bytes"], "kept_bytes": mem["kept_bytes"],
            "grad_error": _grad_error(model, params, x, weight, ref)}


FORWARD = "plain-forward"  # plain's forward alone without autograd: what recomputing F and G costs


def _forward_seconds(model: torch.nn.Module, x: torch.Tensor) -> float:
    if x.device.type == "cuda":
        torch.cuda.synchronize(x.device)
    start = time.perf_counter()
    with torch.no_grad():
        model(x)
    if x.device.type == "cuda":
        torch.cuda.synchronize(x.device)
    return time.perf_counter() - start


def _interleaved_times(models: dict[str, torch.nn.Module], x: torch.Tensor, weight: torch.Tensor,
                       runs: int) -> dict[str, tuple[float, float]]:
    """Median (wall, process CPU) fwd+bwd seconds per column, timed round-robin so that
    load from other processes on a shared machine hits every column alike. CPU time
    (all threads of this process) is what other processes' load disturbs least.
    With a plain column, also plain's no-grad forward alone (``FORWARD``; ``FORWARD + "-cl"``
    for the channels_last plain column)."""
    loss = _loss_fn(weight)
    forwards = {FORWARD + name[len("plain"):]: name for name in ("plain", "plain-cl") if name in models}
    names = list(models) + list(forwards)
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(runs):
        for name in names:
            start = time.process_time()
            if name in forwards:
                wall[name].append(_forward_seconds(models[forwards[name]], x))
            else:
                wall[name] += time_step(models[name], (x,), loss, runs=1)
            cpu[name].append(time.process_time() - start)
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name])) for name in names}


def run(blocks_list: list[int], batch: int, channels: int, size: int, runs: int, device: torch.device,
        columns: list[str], seed: int = 0) -> dict[str, Any]:
    skipped = {}
    for name, why in (("memcnn", memcnn_available()), ("revlib", revlib_available())):
        if name in columns and why is not None:
            skipped[name] = why
    columns = [c for c in columns if c not in skipped]
    results: dict[str, Any] = {"config": {
        "batch": batch, "channels": channels, "size": size, "runs": runs, "device": str(device),
        "torch": torch.__version__, "threads": torch.get_num_threads(), "blocks": blocks_list},
        "skipped": skipped, "rows": []}
    gen = torch.Generator().manual_seed(seed + 1)
    for blocks in blocks_list:
        functions = make_functions(blocks, channels, seed)
        x = torch.randn(batch, channels, size, size, generator=gen).to(device)
        weight = torch.randn(batch, channels, size, size, generator=gen).to(device)
        ref = _reference(functions, x.cpu(), weight.cpu()).to(device)
        row: dict[str, Any] = {"blocks": blocks, "columns": {}}
        models = {}
        for name in columns:
            start = time.perf_counter()
            model, params = COLUMNS[name](functions, channels, size, device=device)
            model.to(device).train()
            models[name] = model
            row["columns"][name] = _memory_and_error(model, params, x, weight, ref)
            print(f"  N={blocks:<3} {name:<20} memory in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        for name, (wall, cpu) in _interleaved_times(models, x, weight, runs).items():
            if name.startswith(FORWARD):
                row[name.replace("-", "_")] = {"seconds": wall, "cpu_seconds": cpu}
                continue
            row["columns"][name]["seconds"] = wall
            row["columns"][name]["cpu_seconds"] = cpu
        plain = row["columns"].get("plain", {})
        for col in row["columns"].values():
            col["ratio"] = col["seconds"] / plain["seconds"] if plain else math.nan
            col["cpu_ratio"] = col["cpu_seconds"] / plain["cpu_seconds"] if plain else math.nan
        results["rows"].append(row)
        del models
    return results


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f}"


def table(results: dict[str, Any]) -> str:
    """A markdown table (what benchmarks/README.md records)."""
    cfg = results["config"]
    lines = [f"input {cfg['batch']}x{cfg['channels']}x{cfg['size']}x{cfg['size']}, device {cfg['device']}, "
             f"torch {cfg['torch']}, {cfg['threads']} threads, median of {cfg['runs']} fwd+bwd",
             "",
             "| N | column | fwd+bwd s | x plain | CPU s | CPU x plain | peak MiB | kept MiB | grad err vs fp64 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in results["rows"]:
        for name, c in row["columns"].items():
            lines.append(f"| {row['blocks']} | {name} | {c['seconds']:.3f} | {c['ratio']:.2f} | "
                         f"{c['cpu_seconds']:.3f} | {c['cpu_ratio']:.2f} | "
                         f"{_mib(c['peak_bytes'])} | {_mib(c['kept_bytes'])} | {c['grad_error']:.2e} |")
    for name, why in results["skipped"].items():
        lines.append(f"\n{name}: skipped ({why})")
    return "\n".join(lines)


def targets(results: dict[str, Any]) -> list[str]:
    """The issue's targets at the largest N, judged on the measured numbers."""
    rows = results["rows"]
    if not rows or "revstudio" not in rows[-1]["columns"]:
        return []
    last = rows[-1]
    rs = last["columns"]["revstudio"]
    out = [f"N={last['blocks']}: revstudio time {rs['ratio']:.2f}x plain wall, {rs['cpu_ratio']:.2f}x CPU "
           "(target <= 1.20x): " + ("met" if max(rs["ratio"], rs["cpu_ratio"]) <= 1.20 else
                                    "met on CPU time" if rs["cpu_ratio"] <= 1.20 else "NOT met")]
    others = [last["columns"][n]["peak_bytes"] for n in ("memcnn", "revlib") if n in last["columns"]]
    if others:
        best = min(others)
        out.append(f"N={last['blocks']}: revstudio peak {_mib(rs['peak_bytes'])} MiB vs best of "
                   f"MemCNN/RevLib {_mib(best)} MiB: " + ("met" if rs["peak_bytes"] <= best else "NOT met"))
    plain = last["columns"].get("plain")
    if plain:
        ratio = rs["grad_error"] / plain["grad_error"] if plain["grad_error"] else math.inf
        out.append(f"N={last['blocks']}: revstudio gradient error {rs['grad_error']:.2e} = {ratio:.2f}x plain's "
                   f"{plain['grad_error']:.2e} (target <= 1.5x): " + ("met" if ratio <= 1.5 else "NOT met"))
    forward = last.get("plain_forward")
    if plain and forward:
        # Reversible backward is plain's backward plus one more forward of every F and G (to
        # rebuild the inputs), so no reversible scheme can take less than this here.
        floor = (plain["cpu_seconds"] + forward["cpu_seconds"]) / plain["cpu_seconds"]
        share = forward["cpu_seconds"] / plain["cpu_seconds"]
        out.append(f"N={last['blocks']}: recompute floor {floor:.2f}x plain CPU (plain's no-grad forward is "
                   f"{share:.0%} of its fwd+bwd); revstudio {rs['cpu_ratio'] / floor:.2f}x that floor"
                   + ("; the 1.20x target is below the floor on this machine" if floor > 1.20 else ""))
    same = last["columns"].get("plain-cl")
    forward = last.get("plain_forward_cl")
    if same and forward and results["config"]["device"] == "cpu":  # regions pick channels_last on the CPU
        floor = (same["cpu_seconds"] + forward["cpu_seconds"]) / same["cpu_seconds"]
        out.append(f"N={last['blocks']}: in one layout (channels_last, as revstudio runs here): revstudio "
                   f"{rs['cpu_seconds'] / same['cpu_seconds']:.2f}x plain-cl CPU, whose recompute floor is "
                   f"{floor:.2f}x")
    cols = last["columns"]
    if "revstudio-checkpoint" in cols and "revstudio-standard" in cols:
        ratio = cols["revstudio-checkpoint"]["peak_bytes"] / cols["revstudio-standard"]["peak_bytes"]
        line = (f"N={last['blocks']}: revstudio checkpoint-mode peak {ratio:.0%} of its standard mode's "
                "(target <= 60%): " + ("met" if ratio <= 0.60 else "NOT met"))
        if "checkpoint" in cols:
            per_block = cols["checkpoint"]["peak_bytes"]
            line += (f"; {_mib(cols['revstudio-checkpoint']['peak_bytes'])} MiB vs per-block checkpoint "
                     f"{_mib(per_block)} MiB: "
                     + ("no higher" if cols["revstudio-checkpoint"]["peak_bytes"] <= per_block else "HIGHER"))
        out.append(line)
    kept = [r["columns"]["revstudio"]["kept_bytes"] for r in rows]
    out.append("revstudio kept-after-forward over N=" + "/".join(str(r["blocks"]) for r in rows) + ": "
               + "/".join(_mib(k) for k in kept) + " MiB: " + ("flat" if len(set(kept)) == 1 else "NOT flat"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--runs", type=int, default=5, help="timed fwd+bwd runs per column (median)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--columns", nargs="+", default=list(COLUMNS), choices=list(COLUMNS),
                        help="default: all (MemCNN/RevLib only when importable)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--quick", action="store_true", help="tiny shapes, one run: a smoke test")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    args = parser.parse_args(argv)
    if args.quick:
        args.blocks, args.batch, args.channels, args.size, args.runs = [2, 4], 2, 8, 8, 1
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("bench_revnet: --device cuda but CUDA is not available; use --device cpu", file=sys.stderr)
        return 2
    results = run(args.blocks, args.batch, args.channels, args.size, args.runs, device, args.columns)
    print(table(results))
    for line in targets(results):
        print(line)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
