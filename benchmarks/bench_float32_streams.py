"""Is there a region depth below which plain float32 streams are accurate enough?

For each depth (RevNet blocks, two couplings each) and weight scale, ``--seeds``
random draws (weights, input, loss weights; four small shapes in turn): the
gradient error against a float64 plain reference of revstudio with float32
streams and with the default compensated pairs, each as a multiple of plain
float32 autograd's own error on the same draw. The issue-13 target is at most
1.5x plain's. ``--scales`` multiplies every convolution weight: 1 is PyTorch's
default init, about 2.45 is He (kaiming-normal) init, which trained ResNets reach.

    python benchmarks/bench_float32_streams.py                      # 50 draws per cell
    python benchmarks/bench_float32_streams.py --depths 2 4 --seeds 10 --scales 1 3
    python benchmarks/bench_float32_streams.py --precision bf16     # forwards under CPU autocast

``--precision bf16`` runs plain autograd, float32 streams and pairs with their forwards under
CPU bf16 autocast (as ``revstudio train --precision bf16`` does), against the same float64
reference: the multiples are then of plain bf16 autograd's error.
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import revnet_models as rm  # noqa: E402

SHAPES = [(8, 16, 8), (4, 32, 8), (16, 16, 4), (2, 16, 16)]  # batch, channels, size


def _grads(params: list[torch.nn.Parameter]) -> torch.Tensor:
    return torch.cat([p.grad.detach().double().flatten() for p in params])


def ratios(depth: int, seeds: int, scale: float, revlib: bool = False, precision: str = "fp32"
           ) -> tuple[list[float], list[float], list[float]]:
    """Per draw: (float32 streams' error / plain's, pairs' error / plain's, and with ``revlib``
    RevLib's error / plain's: the same float32 arithmetic as float32 streams, in its own code)."""
    models: dict[tuple[int, int], torch.nn.Module] = {}
    f32, pair, rl = [], [], []

    def cast() -> contextlib.AbstractContextManager[object]:
        if precision == "fp32":
            return contextlib.nullcontext()
        return torch.autocast("cpu", dtype={"bf16": torch.bfloat16, "fp16": torch.float16}[precision])

    for seed in range(seeds):
        batch, channels, size = SHAPES[seed % len(SHAPES)]
        fns = rm.make_functions(depth, channels, seed=1000 + seed)
        with torch.no_grad():
            for f, g in fns:
                for p in (*f.parameters(), *g.parameters()):
                    p.mul_(scale)
        if (channels, size) not in models:
            models[(channels, size)] = rm.revstudio_model(fns, channels, size)[0]
        model = models[(channels, size)]
        params = rm.load_revstudio_weights(model, fns)
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(batch, channels, size, size, generator=gen)
        w = torch.randn(batch, channels, size, size, generator=gen)
        ref, ref_params = rm.plain_model(fns)
        ref.double()
        (ref(x.double()) * w.double()).sum().backward()
        truth = _grads(ref_params)
        plain, plain_params = rm.plain_model(fns)
        with cast():
            y = plain(x)
        (y.float() * w).sum().backward()
        base = float((_grads(plain_params) - truth).norm() / truth.norm())
        for stream, out in ((torch.float32, f32), ("float32x2", pair)):
            model.stream_dtype = stream
            model.zero_grad(set_to_none=True)
            with cast():
                y = model(x)
            (y.float() * w).sum().backward()
            out.append(float((_grads(params) - truth).norm() / truth.norm()) / base)
        if revlib and precision == "fp32":
            other, other_params = rm.revlib_model(fns)
            (other(x) * w).sum().backward()
            rl.append(float((_grads(other_params) - truth).norm() / truth.norm()) / base)
    return f32, pair, rl


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[2, 3, 4, 6, 8, 12, 16, 24])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0, 2.0, 3.0])
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                        help="bf16: every forward under CPU autocast (RevLib left out)")
    args = parser.parse_args(argv)
    if args.seeds < 1 or min(args.depths) < 1 or min(args.scales) <= 0:
        parser.error("--seeds and --depths take positive whole numbers, --scales positive numbers")
    torch.set_num_threads(1)
    why = rm.revlib_available() if args.precision == "fp32" else "not run under autocast"
    if why is not None:
        print(f"revlib: left out ({why})", file=sys.stderr)
    plain = "float32" if args.precision == "fp32" else f"{args.precision}-autocast"
    print(f"gradient error as a multiple of plain {plain} autograd's, {args.seeds} draws per row")
    rl_head = " RevLib: median / worst | RevLib draws over 1.5x |" if why is None else ""
    print("| weight scale | blocks | float32 streams: median / p95 / worst | draws over 1.5x | pairs: median / worst |"
          + rl_head)
    print("|---|---|---|---|---|" + ("---|---|" if why is None else ""))
    for scale in args.scales:
        for depth in args.depths:
            f32, pair, rl = ratios(depth, args.seeds, scale, revlib=why is None, precision=args.precision)
            f32.sort()
            p95 = f32[int(0.95 * (len(f32) - 1))]
            row = (f"| {scale:g} | {depth} | {statistics.median(f32):.2f} / {p95:.2f} / {f32[-1]:.4g} | "
                   f"{sum(r > 1.5 for r in f32)}/{len(f32)} | {statistics.median(pair):.2f} / {max(pair):.2f} |")
            if rl:
                row += f" {statistics.median(rl):.2f} / {max(rl):.4g} | {sum(r > 1.5 for r in rl)}/{len(rl)} |"
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
