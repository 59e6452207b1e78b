"""``revstudio memory FILE [--batch B] [--device D] [--precision P] [--repeat N] [--top K] [--json]``
(``--depth 1,2,4 [--depth-node NAME]``: the same against a Repeat node's depth, ``memory_depth``).

Runs training steps (forward, loss, backward) in each mode on the same weights
and batch and reports peak bytes, bytes kept after forward and the step's time,
measured (CUDA allocator statistics, or exact live-tensor accounting on CPU),
next to the static estimate of ``revstudio check``; ``--top`` lists the
largest tensors alive at each mode's peak, to see where the memory goes.
``--precision bf16`` (fp16: CUDA) measures the steps as ``train --precision`` runs
them, forward under autocast; the estimate models fp32 steps only, so none is shown.
"""
from __future__ import annotations

import argparse
from typing import Any

from revstudio.cli import CliError, json_text, printable

from ._runargs import (
    THREADS_HELP,
    count,
    graph_errors,
    load_checked,
    memory_amount,
    positive_int,
    refuse_unfit,
    repeats,
    resolve_device,
    seed,
    threads,
    threads_set,
)

MODES = ("standard", "reversible", "checkpoint")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="project file (.revs) or an exported .py")
    parser.add_argument("--batch", type=positive_int, default=8, help="batch size (default 8)")
    parser.add_argument("--device", default="cpu",
                        help="cpu, cuda, cuda:N, mps, xpu or any device torch names (default cpu; 'auto' picks "
                             "CUDA when available)")
    parser.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="fp32",  # (train's)
                        help="measure the steps as train --precision runs them: forward under autocast "
                             "(fp16 needs CUDA); the estimate models fp32 only, so none is shown for the others")
    parser.add_argument("--repeat", type=repeats, default=None,
                        help="timed steps per mode, after one warm-up step each and interleaved "
                             "across modes; the median and the spread are reported (default 5)")
    parser.add_argument("--top", type=count, default=0, metavar="K",
                        help="also list the K largest tensors alive at each mode's peak (default 0)")
    parser.add_argument("--seed", type=seed, default=0, help="seed of weights and batch (default 0)")
    parser.add_argument("--threads", type=threads, default=None, metavar="N", help=THREADS_HELP)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--budget", type=_budget_arg, default=None, metavar="BYTES",
                        help="also run reversible mode under this memory budget (e.g. 64MiB, 1.5GB, "
                             "'unlimited'): shows which regions it keeps and measures it")
    from .memory_depth import depths_arg

    parser.add_argument("--depth", type=depths_arg, default=None, metavar="N,N,...",
                        help="measure again at each of these depths (the times of the project's Repeat node, "
                             "e.g. 1,2,4,8,16): peaks per mode beside the estimate, and how much each mode "
                             "grows per added block")
    parser.add_argument("--depth-node", default=None, metavar="NAME",
                        help="the Repeat node --depth varies, where the project has several")


def _off(error: float) -> str:
    """An estimate's error as a signed percentage, "0%" where it rounds to none (not "-0%")."""
    return "0%" if round(error * 100) == 0 else f"{error:+.0%}"


def _budget_arg(text: str) -> float:
    if text.strip().lower() in ("unlimited", "inf"):
        return float("inf")
    value = memory_amount(text)
    if isinstance(value, str):  # train's "none" (no budget): here, leave --budget out
        raise argparse.ArgumentTypeError(f"{text!r}: to measure without a budget, leave --budget out; "
                                         "to keep everything, write unlimited")
    return value


def measure_modes(graph: Any, batch: int, device: Any, repeat: int = 1, seed: int = 0, top: int = 0,
                  budget: float | None = None, precision: str = "fp32",
                  modes: tuple[str, ...] = MODES) -> dict[str, dict]:
    """{mode: {"peak_bytes", "kept_bytes", "seconds"[, "peak_phase", "peak_tensors",
    "peak_by_dtype"]}} for one model switched between modes (see ``compare_modes``), its
    forward under autocast at a ``precision`` other than fp32."""
    import torch

    from revstudio.compiler import compile as compile_graph
    from revstudio.diagnostics.estimate import input_dtype
    from revstudio.diagnostics.gradcheck import random_inputs, torch_dtype
    from revstudio.diagnostics.memory import Autocast, compare_modes

    dtype = torch_dtype(input_dtype(graph))
    torch.manual_seed(seed)
    model = compile_graph(graph, mode="standard", device=device, dtype=dtype)
    model.train()
    inputs = random_inputs(graph, batch, dtype, seed, device, requires_grad=False)
    if hasattr(model, "initialize"):
        model.initialize(*inputs)
    stepped: Any = model if precision == "fp32" else Autocast(model, device.type, precision)
    measured = compare_modes(stepped, inputs, modes, repeat=repeat, top=top)
    out = {mode: dict(m) for mode, m in measured.items()}
    if budget is not None:
        from ._budget import measure_budget

        out["budget"] = measure_budget(stepped, inputs, budget, repeat)
    model.mode = "standard"
    return out


def run(args: argparse.Namespace) -> int:
    with threads_set(args.threads):  # (before any work)
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from . import memory_depth

    memory_depth.refuse_other_options(args)
    if args.depth is not None:
        return memory_depth.run(args)
    args.repeat = args.repeat or 5
    out = measured(args.file, args.batch, args.device, args.precision, args.repeat, args.seed, args.top, args.budget)
    if args.json:
        print(json_text(out))
        return 0
    print(printable(text(out, args.repeat, args.top)))
    return 0


def measured(file: str, batch: int, device_name: str, precision: str = "fp32", repeat: int = 5, seed: int = 0,
             top: int = 0, budget: float | None = None, modes: tuple[str, ...] = MODES, graph: Any = None) -> dict:
    """The object ``memory --json`` prints (``rs.memory``'s too: ``modes`` a part of them, ``graph``
    the project in memory that ``file`` names); CliError where the command exits 1 or 2."""
    # on the CPU torch is imported only once the sizes are known to fit (importing it takes seconds)
    device = None if device_name == "cpu" else resolve_device(device_name)
    graph, report = load_checked(file, batch=batch, device=device if device is not None else "cpu", graph=graph)
    from revstudio.diagnostics.estimate import input_dtype

    refuse_unfit(file, graph, report, batch, input_dtype(graph), device or "cpu")
    if device is None:
        device = resolve_device(device_name)
    if precision == "fp16" and device.type != "cuda":
        raise CliError("--precision fp16 needs a CUDA device (train runs it with a GradScaler there); "
                       "on the CPU use --precision bf16 or fp32", 2)
    with graph_errors(file):
        steps = measure_modes(graph, batch, device, repeat, seed, top, budget, precision, modes)
    # (under autocast the fp32 figures would not be the step's: 1.3-3.6x off on the examples)
    from revstudio.diagnostics.estimate import precision_note

    modelled = precision_note(precision) is None
    estimate = report.estimate.to_json() if report.estimate is not None and modelled else {}
    out = {"file": file, "batch": batch, "device": str(device), "precision": precision,
           "measured_with": method(device), "device_memory_bytes": _device_memory(device),
           "modes": steps, "estimate": estimate, "estimate_note": estimate_note(device, precision),
           **measured_where(graph)}
    if budget is not None:
        from ._budget import budget_section

        out["budget"] = budget_section(graph, report, budget, batch, steps, steps.pop("budget"),
                                       device.type, estimated=modelled)
    return out


def text(out: dict, repeat: int, top: int = 0) -> str:
    """What ``memory`` prints of ``out`` (:func:`measured`'s) without ``--json``."""
    lines = [_table(out, repeat)]
    if "budget" in out:
        from ._budget import budget_lines

        lines.append(budget_lines(out["budget"]))
    if top:
        lines.append(_top_listing(out["modes"], top))
    return "\n".join(lines)


def _device_memory(device: Any) -> int | None:
    """Total memory of a CUDA device (what "fits on my device" compares against); None on the CPU."""
    if device.type != "cuda":
        return None
    import torch

    return int(torch.cuda.get_device_properties(device).total_memory)


def method(device: Any) -> str:
    return "cuda allocator statistics" if device.type == "cuda" else "live tensor accounting"


def estimate_note(device: Any, precision: str = "fp32") -> str | None:
    """What a measured peak holds that the estimate does not count, on this device and at this
    precision (None: nothing to say: on the CPU in fp32 both count the model's tensors exactly).
    Measured on an H200: cuDNN's RNN workspace is about 17 MB in every mode, its convolution
    workspace a few hundred KB (benchmarks/README.md, "The GPU check"). Under autocast no
    estimate is shown (``precision_note``)."""
    from revstudio.diagnostics.estimate import precision_note

    low = precision_note(precision)
    if low is not None:
        return f"no estimate: {low}"
    if device.type != "cuda":
        return None
    return ("the estimate counts the model's tensors; a CUDA peak also holds cuDNN's workspaces "
            "(about 17 MB for an LSTM or GRU), which it does not")


def measured_where(graph: Any) -> dict[str, Any]:
    """What a figure quoted from this measurement needs beside it: the versions, the CPU threads (they
    change the timings) and the network measured (a depth sweep measures a network per depth)."""
    import platform

    import torch

    from revstudio import __version__
    from revstudio.core.digest import network_digest

    return {"versions": {"revstudio": __version__, "torch": torch.__version__, "python": platform.python_version()},
            "threads": torch.get_num_threads(), "network_digest": network_digest(graph)}


def where_words(out: dict) -> str:
    """The line of :func:`measured_where`'s keys in ``out``: 'revstudio V, torch V, python V, N CPU
    threads' and, where ``out`` has one digest, '; network sha256:...' (a depth sweep has one a row)."""
    v = out["versions"]
    words = (f"revstudio {v['revstudio']}, torch {v['torch']}, python {v['python']}, "
             f"{out['threads']} CPU thread{'s' if out['threads'] != 1 else ''}")
    if "network_digest" not in out:
        return words
    from revstudio.core.digest import short

    return f"{words}; network {short(out['network_digest'])}"


def _table(out: dict, repeat: int = 1) -> str:
    from revstudio.diagnostics.estimate import fmt_bytes

    modes, precision = out["modes"], out["precision"]
    est_modes = out["estimate"].get("modes", {})
    seconds = "seconds" if repeat == 1 else f"seconds: median (min-max of {repeat})"
    rows: list[tuple[str, ...]] = [("mode", "peak", "estimate peak", "kept after fwd", "estimate kept", seconds,
                                    "peak vs standard")]
    base = modes.get("standard", {}).get("peak_bytes")  # (rs.memory may measure other modes alone)
    for mode, m in modes.items():
        est = est_modes.get(mode, {}).get("activation_bytes")
        est_peak = est_modes.get(mode, {}).get("peak_bytes")
        runs = m.get("seconds_runs") or [m["seconds"]]
        spread = f" ({min(runs):.4f}-{max(runs):.4f})" if len(runs) > 1 else ""
        rows.append((mode, fmt_bytes(m["peak_bytes"]),
                     (f"{fmt_bytes(est_peak)} ({_off(est_peak / m['peak_bytes'] - 1)})"
                      if isinstance(est_peak, int) and m["peak_bytes"] else "-"),
                     fmt_bytes(m["kept_bytes"]),
                     fmt_bytes(est) if isinstance(est, int) else "-", f"{m['seconds']:.4f}{spread}",
                     f"{m['peak_bytes'] / (base or 1):.2f}x"))
    if base is None:
        rows = [r[:-1] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    cast = "" if precision == "fp32" else f", forward under {precision} autocast"
    lines = [f"{out['file']}: one training step, batch {out['batch']}, {out['device']}{cast} ({out['measured_with']}; "
             "bytes exclude weights and inputs)"]
    if "versions" in out:
        lines.append(f"  {where_words(out)}")
    note = out["estimate_note"]
    if note:
        lines.append(f"  {note}")
    if repeat > 1:
        lines.append(f"  every mode warmed up first, then {repeat} timed steps each, taking turns; "
                     "on a loaded machine compare the spreads (benchmarks/bench_revnet.py times properly)")
    for r in rows:
        lines.append("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                      for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


def _top_listing(modes: dict[str, dict], top: int) -> str:
    from revstudio.diagnostics.estimate import fmt_bytes

    lines = []
    for mode, m in modes.items():
        tensors = m.get("peak_tensors", [])
        by_dtype = ", ".join(f"{d} {fmt_bytes(b)}" for d, b in m.get("peak_by_dtype", {}).items())
        lines.append("")
        lines.append(f"{mode}: peak {fmt_bytes(m['peak_bytes'])} during {m.get('peak_phase') or 'the step'} "
                     f"({by_dtype or 'nothing allocated'}); the {len(tensors)} largest live tensors:")
        rows = [("bytes", "dtype", "shape", "op", "node or region", "autograd node", "allocated at")]
        for t in tensors:
            rows.append((fmt_bytes(t["bytes"]), t["dtype"], "x".join(map(str, t["shape"])) or "scalar",
                         t["op"], t.get("module") or "-", t["grad_fn"] or "-", t["where"] or "-"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            lines.append("  " + "  ".join(c.rjust(w) if i == 0 else c.ljust(w)
                                          for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        shown = sum(t["bytes"] for t in tensors)
        rest = m["peak_bytes"] - shown
        if rest > 0 and tensors:
            lines.append(f"  ... and {fmt_bytes(rest)} in smaller tensors")
    return "\n".join(lines)
