"""The backward pair update written over F's output, against the usual one, in one process.

A coupling's backward rebuilds its input with a compensated update (TwoSum). Where F's output
is memory only the step holds (``runtime_streams.sole``), the runtime writes the update over
it (``update_over``): two temporaries instead of three, in fewer pieces. This benchmark
switches that off ("old": ``sole`` answers no) and on ("new") on the same model, and per
cell prints whether the gradients hash the same, both peaks (live-tensor tracker), and the
median over rounds of the per-round ratio new / old of the step's CPU time (rounds of 10
steps, the order random in each round, so both see the same machine).

    python benchmarks/bench_update_over.py                       # the cells of benchmarks/README.md
    python benchmarks/bench_update_over.py --rounds 5 2x2x8x4 seq:2x2x8x8
"""
from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_sweep as bs  # noqa: E402
import revnet_models as rm  # noqa: E402

from revstudio.compiler import runtime_steps  # noqa: E402
from revstudio.diagnostics.memory import LiveTensorTracker  # noqa: E402

CELLS = ["8x1x32x16", "8x4x32x16", "8x16x32x16", "8x64x32x16", "8x16x8x16", "8x16x32x4", "8x16x32x8",
         "2x16x32x16", "2x1x8x4", "3x32x16x8", "32x32x16x16", "8x8x32x32", "seq:4x16x32x64", "seq:16x4x16x32"]
_SOLE = runtime_steps.sole


def _switch(on: bool) -> None:
    runtime_steps.sole = _SOLE if on else (lambda f: False)


def _step(model: torch.nn.Module, x: torch.Tensor, w: torch.Tensor) -> None:
    for p in model.parameters():
        p.grad = None
    (model(x) * w).sum().backward()


def _grad_hash(model: torch.nn.Module) -> str:
    h = hashlib.sha1()
    for p in model.parameters():
        if p.grad is not None:
            h.update(p.grad.detach().cpu().numpy().tobytes())
    return h.hexdigest()


def measure(text: str, rounds: int, steps: int = 10, seed: int = 0) -> dict[str, Any]:
    cell = bs.parse_cell(text)
    kind, batch, channels, size, depth = cell
    functions = (bs.seq_functions if kind == "seq" else rm.make_functions)(depth, channels, seed)
    model, _ = bs.build(cell, "revstudio", functions)
    model.train()
    gen = torch.Generator().manual_seed(seed + 1)
    shape = (batch, channels, size) if kind == "seq" else (batch, channels, size, size)
    x, w = torch.randn(*shape, generator=gen), torch.randn(*shape, generator=gen)
    out: dict[str, Any] = {"cell": text}
    for on in (False, True):
        _switch(on)
        _step(model, x, w)
        out[f"hash_{int(on)}"] = _grad_hash(model)
        with LiveTensorTracker(exact_resizes=True) as tracker:
            base = tracker.live_bytes()
            _step(model, x, w)
            out[f"peak_{int(on)}"] = tracker.peak_bytes - base
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(rounds):
        order = [False, True]
        random.shuffle(order)
        for on in order:
            _switch(on)
            t0 = time.thread_time()
            for _ in range(steps):
                _step(model, x, w)
            times[on].append((time.thread_time() - t0) / steps)
    _switch(True)
    out["ratio"] = statistics.median(a / b for a, b in zip(times[True], times[False]))
    out["old_ms"] = statistics.median(times[False]) * 1e3
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cells", nargs="*", default=CELLS, help="DEPTHxBATCHxCHxSIZE or seq:... (bench_sweep's)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"| cell | gradients | peak old -> new (B) | new / old step time (median of {args.rounds} rounds) "
          "| old step ms |")
    print("|---|---|---|---|---|")
    for text in args.cells:
        r = measure(text, args.rounds)
        same = "bit-identical" if r["hash_0"] == r["hash_1"] else "DIFFER"
        print(f"| {text} | {same} | {r['peak_0']:,} -> {r['peak_1']:,} | {r['ratio']:.3f} | {r['old_ms']:.1f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
