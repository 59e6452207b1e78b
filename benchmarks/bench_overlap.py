"""Can the recompute overlap the backward on a second CUDA stream? A measurement.

In a reversible backward, coupling step k (``r = p + F_k(q)``) first recomputes
``F_k(q)`` to rebuild its input ``p = r - F_k(q)``, then runs F_k's backward (its
vjp). The rebuilt ``p`` is what step k-1 reads, so F_{k-1}'s recompute can start as
soon as ``p`` exists, while F_k's vjp still runs. PaReprop (Zhao et al., 2023)
issues that recompute on a second CUDA stream and reports up to 20 % more
throughput. This script runs the benchmark RevNet (``revnet_models``: F and G
Conv3x3 -> ReLU -> Conv3x3 on half the channels) through one hand-written
reversible backward in two schedules, serial and overlapped, and prints per cell:
plain autograd's step, the recompute floor (plain plus a no-grad forward), the
revstudio runtime, the serial and overlapped hand-written steps, the overlap's
gain, the allocator peaks, and how far the overlapped gradients are from the
serial ones.

    python benchmarks/bench_overlap.py                         # on a CUDA machine
    python benchmarks/bench_overlap.py --device cpu --quick    # the same schedule, one stream

On the CPU there is no second stream: the overlapped schedule runs in the same
order on one, which checks its arithmetic (the tests do) but can gain nothing.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import revnet_models as rm  # noqa: E402
from bench_revnet import FORWARD, _interleaved_times, _loss_fn  # noqa: E402

from revstudio.diagnostics.memory import measure_step  # noqa: E402

# (depth, batch, channels, size): the RevNet benchmark's shape first, then shapes big
# enough that one convolution keeps much of the GPU busy
CELLS = [(16, 16, 64, 16), (8, 64, 128, 32), (8, 128, 256, 32), (8, 32, 512, 16)]
QUICK = [(2, 2, 8, 4), (3, 4, 8, 8)]


class _Streams:
    """The two streams the steps alternate between (step k on ``of(k)``). On the CPU, or
    serially, none: every context is a no-op and no event is recorded."""

    def __init__(self, device: torch.device, two: bool) -> None:
        self.cuda = device.type == "cuda"
        self.streams = ([torch.cuda.current_stream(device), torch.cuda.Stream(device)] if self.cuda and two
                        else [])

    def of(self, k: int) -> Any:
        return self.streams[k % 2] if self.streams else None

    def on(self, stream: Any) -> contextlib.AbstractContextManager[Any]:
        return torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()

    def event(self, stream: Any) -> Any:
        if stream is None:
            return None
        event = torch.cuda.Event()
        event.record(stream)
        return event

    def wait(self, stream: Any, event: Any) -> None:
        if stream is not None and event is not None:
            stream.wait_event(event)

    def used_on(self, stream: Any, *tensors: torch.Tensor) -> None:
        """Tell the caching allocator ``tensors`` are read on ``stream`` too, so their
        memory is not handed out again before that stream is done with them."""
        if stream is not None:
            for t in tensors:
                t.record_stream(stream)


def _recompute(fn: nn.Module, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.enable_grad():
        qq = q.detach().requires_grad_()
        return qq, fn(qq)


def reversible_backward(steps: list[nn.Module], q: torch.Tensor, r: torch.Tensor, gq: torch.Tensor,
                        gr: torch.Tensor, overlap: bool) -> tuple[list[torch.Tensor], list[list[torch.Tensor]]]:
    """From the chain's outputs (q, r) and their gradients: the inputs' gradients and each
    step's parameter gradients. Step k maps (p, q) to (q, p + F_k(q)). ``overlap``: step
    k-1's recompute is issued, on the other stream, before step k's vjp."""
    device = q.device
    st = _Streams(device, overlap)
    n = len(steps)
    pgrads: list[list[torch.Tensor]] = [[] for _ in steps]
    main = torch.cuda.current_stream(device) if st.streams else None
    first = st.of(n - 1)
    if first is not None and first is not main:
        first.wait_stream(main)
        st.used_on(first, q, r, gq, gr)
    with st.on(first):
        pending = _recompute(steps[n - 1], q)
    grads_ready = None  # recorded after each vjp, on that step's stream
    for k in range(n - 1, -1, -1):
        here = st.of(k)
        qq, fq = pending
        with st.on(here):
            p = r - fq.detach()
        if k > 0 and overlap:
            there = st.of(k - 1)
            st.wait(there, st.event(here))
            st.used_on(there, p)
            with st.on(there):
                pending = _recompute(steps[k - 1], p)
        st.wait(here, grads_ready)
        st.used_on(here, gq, gr)
        with st.on(here):
            params = list(steps[k].parameters())
            res = torch.autograd.grad(fq, [qq, *params], gr)
            del fq
            gq_total = gq + res[0]
            pgrads[k] = list(res[1:])
        grads_ready = st.event(here)
        if k > 0 and not overlap:
            pending = _recompute(steps[k - 1], p)
        # before step k: (p, q), with gradients (gr, gq_total)
        q, r, gq, gr = p, q, gr, gq_total
        del qq, res, gq_total, p
    if main is not None:
        main.wait_stream(st.streams[1])
        st.used_on(main, q, r, gq, gr, *[g for gs in pgrads for g in gs])
    return [gq, gr], pgrads


class _Chain(torch.autograd.Function):
    """The whole chain as one Function: the forward keeps only its outputs."""

    @staticmethod
    def forward(ctx: Any, steps: list[nn.Module], overlap: bool, x1: torch.Tensor, x2: torch.Tensor,
                *params: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        p, q = x1, x2
        with torch.no_grad():
            for fn in steps:
                p, q = q, p + fn(q)
        ctx.steps, ctx.overlap = steps, overlap
        ctx.save_for_backward(p, q)
        return p, q

    @staticmethod
    def backward(ctx: Any, g1: torch.Tensor, g2: torch.Tensor) -> tuple[Any, ...]:
        q, r = ctx.saved_tensors
        (gx1, gx2), pgrads = reversible_backward(ctx.steps, q, r, g1, g2, ctx.overlap)
        return (None, None, gx1, gx2, *[g for gs in pgrads for g in gs])


class HandReversible(nn.Module):
    """The RevNet with the hand-written reversible backward (serial or overlapped)."""

    def __init__(self, functions: list[tuple[nn.Module, nn.Module]], overlap: bool) -> None:
        super().__init__()
        import copy

        self.steps = nn.ModuleList(copy.deepcopy(m) for pair in functions for m in pair)
        self.overlap = overlap

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=1)
        y1, y2 = _Chain.apply(list(self.steps), self.overlap, x1.contiguous(), x2.contiguous(),
                              *self.parameters())
        return torch.cat([y1, y2], dim=1)


def hand_model(functions: list[tuple[nn.Module, nn.Module]], overlap: bool) -> rm.Built:
    model = HandReversible(functions, overlap)
    return model, list(model.parameters())  # F0, G0, F1, ...: the canonical order


COLUMNS: dict[str, Callable[..., rm.Built]] = {
    "plain": lambda fns, c, s, device: rm.plain_model(fns),
    "revstudio": lambda fns, c, s, device: rm.revstudio_model(fns, c, s, device=device),
    "serial": lambda fns, c, s, device: hand_model(fns, overlap=False),
    "overlapped": lambda fns, c, s, device: hand_model(fns, overlap=True),
}


def _grads(params: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([p.grad.reshape(-1) for p in params])  # type: ignore[union-attr]


def measure_cell(cell: tuple[int, int, int, int], runs: int, device: torch.device) -> dict[str, Any]:
    """One cell, with bench_revnet's machinery: each column's peak (``measure_step``: the
    allocator's on CUDA, exact accounting on the CPU), its gradients against plain autograd's,
    and its median step, columns taking turns, beside plain's no-grad forward (the floor)."""
    depth, batch, channels, size = cell
    functions = rm.make_functions(depth, channels)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(batch, channels, size, size, generator=gen).to(device)
    weight = torch.randn(batch, channels, size, size, generator=gen).to(device)
    loss = _loss_fn(weight)
    models, grads = {}, {}
    out: dict[str, Any] = {"cell": list(cell), "columns": {}}
    for name, build in COLUMNS.items():
        model, params = build(functions, channels, size, device)
        models[name] = model.to(device).train()
        mem = measure_step(model, (x,), loss, timing_runs=0, exact_resizes=device.type == "cpu")
        out["columns"][name] = {"peak_bytes": mem["peak_bytes"]}
        model.zero_grad(set_to_none=True)
        loss(model(x)).backward()
        grads[name] = _grads(params)
    ref = grads["plain"]
    for name, g in grads.items():
        out["columns"][name]["grad_vs_plain"] = float((g - ref).norm() / ref.norm())
    out["overlapped_vs_serial"] = float((grads["overlapped"] - grads["serial"]).norm() / grads["serial"].norm())
    wall = {name: w for name, (w, _cpu) in _interleaved_times(models, x, weight, runs).items()}
    plain = wall["plain"]
    out["floor"] = (plain + wall[FORWARD]) / plain
    for name in models:
        out["columns"][name].update(seconds=wall[name], ratio=wall[name] / plain)
    out["gain"] = 1 - wall["overlapped"] / wall["serial"]
    return out


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f}"


def table(cells: list[dict[str, Any]]) -> str:
    head = ["depth x batch x ch x size", "plain ms", "floor", "revstudio", "serial", "overlapped",
            "overlap gain", "peak MiB plain / serial / overlapped", "overlapped vs serial grads"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in cells:
        d, b, c, s = r["cell"]
        cols = r["columns"]

        lines.append("| " + " | ".join([
            f"{d}x{b}x{c}x{s}", f"{1000 * cols['plain']['seconds']:.2f}", f"{r['floor']:.2f}",
            *[f"{cols[n]['ratio']:.2f}" for n in ("revstudio", "serial", "overlapped")],
            f"{100 * r['gain']:+.1f} %", " / ".join(_mib(cols[n]["peak_bytes"]) for n in ("plain", "serial", "overlapped")),
            f"{r['overlapped_vs_serial']:.1e}"]) + " |")
    return "\n".join(lines)


def run(cells: list[tuple[int, int, int, int]], runs: int, device: torch.device) -> dict[str, Any]:
    results = []
    for cell in cells:
        start = time.perf_counter()
        results.append(measure_cell(cell, runs, device))
        print(f"  {'x'.join(map(str, cell)):<16} {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    return {"device": str(device), "torch": torch.__version__, "runs": runs, "cells": results}


def parse_cell(text: str) -> tuple[int, int, int, int]:
    try:
        d, b, c, s = (int(v) for v in text.split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: write a cell as DEPTHxBATCHxCHANNELSxSIZE, "
                                         "e.g. 8x64x128x32") from None
    return d, b, c, s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="tiny cells, 2 runs: a smoke run")
    parser.add_argument("--cells", type=parse_cell, nargs="+", help="cells to run instead of the default ones")
    parser.add_argument("--runs", type=int, default=None, help="timed runs per column (default 15; quick 2)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    args = parser.parse_args(argv)
    # the overlapped schedule hands the outer backward parameter gradients made on the second
    # stream; it waits for that stream before returning them, which is all the warning asks
    warnings.filterwarnings("ignore", message="The AccumulateGrad node's stream does not match")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("bench_overlap: --device cuda but CUDA is not available here; use --device cpu", file=sys.stderr)
        return 2
    results = run(args.cells or (QUICK if args.quick else CELLS), args.runs or (2 if args.quick else 15), device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (one stream: no overlap)"
    print(f"{name}, torch {torch.__version__}, wall time, median of {results['runs']} interleaved runs; "
          "columns are x plain's fwd+bwd")
    print(table(results["cells"]))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
