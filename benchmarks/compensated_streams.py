"""Compensated float32 residual streams, measured before building them into the runtime.

A stream kept as a float32 value ``hi`` plus a correction ``lo`` (TwoSum after each
coupling update, then renormalised so ``hi`` is the float32 rounding of hi + lo):
F reads ``hi`` directly, the inverse subtracts F from the pair. This script runs the
same fused reversible backward as the runtime (F/G recomputed from the rebuilt
streams, gradients in float32) on the RevNet of bench_revnet.py, with the streams
as float32, float64, or float32 + a correction in bfloat16 / float16 / float16
scaled by the ulp of hi / float32, and reports the gradient error against float64
plain autograd (bench_revnet.py's metric and inputs: its float32 and float64 rows
are reproduced exactly). The ``runtime`` row runs the revstudio runtime itself with
its compensated float32 streams (``stream_dtype = "float32x2"``, the f32+f32 kind).

    python benchmarks/compensated_streams.py --blocks 4 16 64 --batch 16
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's revstudio
from revnet_models import make_functions, revstudio_model  # noqa: E402

Stream = Any  # a tensor, or (hi, lo) / (hi, lo, ulp) for compensated streams


class Kind:
    """How a stream is stored: ``wide`` float32/float64, or float32 hi + ``lo`` correction."""

    def __init__(self, wide: torch.dtype | None = None, lo: torch.dtype | None = None, scaled: bool = False) -> None:
        self.wide, self.lo, self.scaled = wide, lo, scaled

    def make(self, x: torch.Tensor) -> Stream:
        if self.wide is not None:
            return x.to(self.wide)
        return self._pack(x.float(), torch.zeros_like(x, dtype=torch.float32))

    def value(self, s: Stream) -> torch.Tensor:
        """What F reads: the float32 rounding of the stream."""
        return s.float() if self.wide is not None else s[0]

    def add(self, s: Stream, f: torch.Tensor, sign: int) -> Stream:
        if self.wide is not None:
            return s + sign * f.to(self.wide)
        hi, lo = s[0], self._lo(s)
        f = f if sign > 0 else -f
        total = hi + f  # TwoSum: total + err == hi + f exactly
        back = total - hi
        err = (hi - (total - back)) + (f - back)
        lo = lo + err
        new_hi = total + lo  # renormalise (Fast2Sum: |total| >= |lo|)
        return self._pack(new_hi, lo - (new_hi - total))

    def _pack(self, hi: torch.Tensor, lo: torch.Tensor) -> Stream:
        if not self.scaled:
            return (hi, lo.to(self.lo))
        ulp = torch.ldexp(torch.ones_like(hi), torch.frexp(hi)[1] - 24)
        return (hi, (lo / ulp).to(self.lo), ulp)  # lo / ulp(hi) lies in [-1/2, 1/2]

    def _lo(self, s: Stream) -> torch.Tensor:
        return s[1].float() * s[2] if self.scaled else s[1].float()

    def halves(self, s: Stream) -> tuple[Stream, Stream]:
        if self.wide is not None:
            a, b = s.chunk(2, 1)
            return a, b
        parts = [t.chunk(2, 1) for t in s]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)

    def bytes_per_value(self) -> int:
        if self.wide is not None:
            return torch.finfo(self.wide).bits // 8
        return 4 + torch.finfo(self.lo).bits // 8 if self.lo is not None else 4


class Grid(Kind):
    """float64 streams on a fixed grid of 2^-40: F's output is rounded onto the grid (in its own
    float32, ``(f + c) - c`` with ``ulp(c) = 2^-40``), so every update and its inverse are exact
    while a stream value stays under 2^12: the backward rebuilds the forward's streams bit for
    bit. Measured to see whether exact reversibility removes the ReLU-kink lottery at depth."""

    C = 1.5 * 2.0 ** -17  # float32 with ulp 2^-40

    def __init__(self) -> None:
        super().__init__(torch.float64)

    def make(self, x: torch.Tensor) -> Stream:
        return self._grid(x).double()

    def add(self, s: Stream, f: torch.Tensor, sign: int) -> Stream:
        q = self._grid(f).double()
        return s + q if sign > 0 else s - q

    def _grid(self, f: torch.Tensor) -> torch.Tensor:
        return (f.float() + self.C) - self.C


KINDS = {
    "float32": Kind(torch.float32),
    "float64": Kind(torch.float64),
    "f32+bf16": Kind(lo=torch.bfloat16),
    "f32+f16": Kind(lo=torch.float16),
    "f32+f16/ulp": Kind(lo=torch.float16, scaled=True),
    "f32+f32": Kind(lo=torch.float32),
    "f64-grid": Grid(),
}


def reversible_grads(fns: list, x: torch.Tensor, w: torch.Tensor, kind: Kind) -> torch.Tensor:
    """Forward without keeping activations, then the runtime's fused backward."""
    x1, x2 = kind.halves(kind.make(x))
    with torch.no_grad():
        for f, g in fns:
            x1 = kind.add(x1, f(kind.value(x2)), 1)
            x2 = kind.add(x2, g(kind.value(x1)), 1)
    gy1, gy2 = w.chunk(2, 1)
    grads: dict[int, torch.Tensor] = {}
    for f, g in reversed(fns):
        for fn, src, dst in ((g, "x1", "x2"), (f, "x2", "x1")):
            b = kind.value(x1 if src == "x1" else x2).detach().requires_grad_(True)
            with torch.enable_grad():
                out = fn(b)
            if dst == "x2":
                x2 = kind.add(x2, out.detach(), -1)
            else:
                x1 = kind.add(x1, out.detach(), -1)
            res = torch.autograd.grad(out, [b, *fn.parameters()], gy2 if dst == "x2" else gy1)
            if dst == "x2":
                gy1 = gy1 + res[0]
            else:
                gy2 = gy2 + res[0]
            for p, r in zip(fn.parameters(), res[1:]):
                grads[id(p)] = r
    return torch.cat([grads[id(p)].double().flatten() for f, g in fns for m in (f, g) for p in m.parameters()])


def plain_grads(fns: list, x: torch.Tensor, w: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    fns = [(copy.deepcopy(f).to(dtype), copy.deepcopy(g).to(dtype)) for f, g in fns]
    x1, x2 = x.to(dtype).chunk(2, 1)
    for f, g in fns:
        x1 = x1 + f(x2)
        x2 = x2 + g(x1)
    (torch.cat([x1, x2], 1) * w.to(dtype)).sum().backward()
    return torch.cat([p.grad.double().flatten() for f, g in fns for m in (f, g) for p in m.parameters()])


def runtime_grads(fns: list, x: torch.Tensor, w: torch.Tensor, stream: Any = "float32x2") -> torch.Tensor:
    """The same gradients from the runtime itself (``model.stream_dtype = stream``)."""
    model, params = revstudio_model(fns, x.shape[1], x.shape[2])
    model.stream_dtype = stream
    (model(x) * w).sum().backward()
    return torch.cat([p.grad.double().flatten() for p in params])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0, help="bench_revnet.py's --seed (inputs drawn as it does)")
    parser.add_argument("--channels", type=int, default=64, help="stream channels (bench_sweep's cells: 32)")
    parser.add_argument("--draws", type=int, default=1, help="batches per depth, drawn one after another")
    parser.add_argument("--kinds", nargs="+", default=[*KINDS, "runtime"], choices=[*KINDS, "runtime"],
                        help="rows to run; runtime: the revstudio runtime with its float32x2 streams")
    args = parser.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(args.seed + 1)
    print("| N | streams | bytes/value | grad err vs fp64 | x plain's | s |")
    print("|---|---|---|---|---|---|")
    for blocks, _draw in ((b, d) for b in args.blocks for d in range(args.draws)):
        fns = make_functions(blocks, args.channels, args.seed)
        x = torch.randn(args.batch, args.channels, 16, 16, generator=gen)
        w = torch.randn(args.batch, args.channels, 16, 16, generator=gen)
        ref = plain_grads(fns, x, w, torch.float64)
        plain = float((plain_grads(fns, x, w, torch.float32) - ref).norm() / ref.norm())
        print(f"| {blocks} | plain autograd | - | {plain:.3g} | 1.00 | - |")
        for name in args.kinds:
            start = time.perf_counter()
            if name == "runtime":
                grads, size = runtime_grads(fns, x, w), 8
            else:
                grads, size = reversible_grads(fns, x, w, KINDS[name]), KINDS[name].bytes_per_value()
            err = float((grads - ref).norm() / ref.norm())
            print(f"| {blocks} | {name} | {size} | {err:.3g} | {err / plain:.2f} "
                  f"| {time.perf_counter() - start:.2f} |")


if __name__ == "__main__":
    main()
