"""``revstudio memory FILE [--batch B] [--device D] [--json]``: measured memory per mode.

Runs one training step (forward, loss, backward) in each mode on the same
weights and batch and reports peak bytes, bytes kept after forward and the
step's time, measured (CUDA allocator statistics, or exact live-tensor
accounting on CPU), next to the static estimate of ``revstudio check``.
"""
from __future__ import annotations

import argparse
import json
from typing import Any

from revstudio.cli import CliError

from ._runargs import compile_error, load_checked, positive_int, resolve_device

MODES = ("standard", "reversible", "checkpoint")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="project file (.revs)")
    parser.add_argument("--batch", type=positive_int, default=8, help="batch size (default 8)")
    parser.add_argument("--device", default="cpu",
                        help="cpu, cuda or cuda:N (default cpu; 'auto' picks CUDA when available)")
    parser.add_argument("--repeat", type=positive_int, default=1,
                        help="timed steps per mode; the median is reported (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of weights and batch (default 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def measure_modes(graph: Any, batch: int, device: Any, repeat: int = 1, seed: int = 0) -> dict[str, dict]:
    """{mode: {"peak_bytes", "kept_bytes", "seconds"}} for one model switched between modes."""
    import torch

    from revstudio.compiler import compile as compile_graph
    from revstudio.diagnostics.estimate import input_dtype
    from revstudio.diagnostics.gradcheck import random_inputs, torch_dtype
    from revstudio.diagnostics.memory import measure_step

    dtype = torch_dtype(input_dtype(graph))
    torch.manual_seed(seed)
    model = compile_graph(graph, mode="standard", device=device, dtype=dtype)
    model.train()
    inputs = random_inputs(graph, batch, dtype, seed, device, requires_grad=False)
    if hasattr(model, "initialize"):
        model.initialize(*inputs)
    out = {}
    for mode in MODES:
        model.mode = mode
        out[mode] = dict(measure_step(model, inputs, timing_runs=repeat))
    model.mode = "standard"
    return out


def run(args: argparse.Namespace) -> int:
    device = resolve_device(args.device)
    graph, report = load_checked(args.file, batch=args.batch)
    try:
        modes = measure_modes(graph, args.batch, device, args.repeat, args.seed)
    except Exception as exc:
        err = compile_error(exc)
        if err is not None:
            raise err from None
        if isinstance(exc, ValueError):
            raise CliError(f"{args.file}: {exc}", 1) from None
        raise
    estimate = report.estimate.to_json() if report.estimate is not None else {}
    if args.json:
        print(json.dumps({"file": args.file, "batch": args.batch, "device": str(device),
                          "measured_with": _method(device), "modes": modes, "estimate": estimate}))
        return 0
    print(_table(args.file, args.batch, device, modes, estimate))
    return 0


def _method(device: Any) -> str:
    return "cuda allocator statistics" if device.type == "cuda" else "live tensor accounting"


def _table(path: str, batch: int, device: Any, modes: dict[str, dict], estimate: dict) -> str:
    from revstudio.diagnostics.estimate import fmt_bytes

    est_modes = estimate.get("modes", {})
    rows = [("mode", "peak", "kept after fwd", "estimate kept", "seconds", "peak vs standard")]
    base = modes["standard"]["peak_bytes"] or 1
    for mode, m in modes.items():
        est = est_modes.get(mode, {}).get("activation_bytes")
        rows.append((mode, fmt_bytes(m["peak_bytes"]), fmt_bytes(m["kept_bytes"]),
                     fmt_bytes(est) if isinstance(est, int) else "-", f"{m['seconds']:.4f}",
                     f"{m['peak_bytes'] / base:.2f}x"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [f"{path}: one training step, batch {batch}, {device} ({_method(device)}; "
             "bytes exclude weights and inputs)"]
    for r in rows:
        lines.append("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                      for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)
