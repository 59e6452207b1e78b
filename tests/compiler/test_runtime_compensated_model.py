"""benchmarks/compensated_streams.py models the runtime's reversible backward: its float32,
float64 and f32+f32 (``stream_dtype = "float32x2"``) stream gradients must be the runtime's, or its verdict on compensated streams
(README, RevNet section) would not be about the runtime. Also: a float32 correction term is
as exact as a float64 stream, and the correction arithmetic is exact (TwoSum)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import compensated_streams as cs  # noqa: E402
from revnet_models import make_functions, revstudio_model  # noqa: E402

torch.set_num_threads(1)


def _runtime_grads(fns: list, x: torch.Tensor, w: torch.Tensor, stream: torch.dtype | str) -> torch.Tensor:
    model, params = revstudio_model(fns, x.shape[1], x.shape[2])
    model.stream_dtype = stream
    # the model computes in the usual layout; channels_last (the CPU default) only changes how
    # the convolutions round, not the stream arithmetic modelled here
    model.memory_format = torch.contiguous_format
    (model(x) * w).sum().backward()
    return torch.cat([p.grad.double().flatten() for p in params])


@pytest.mark.parametrize("kind", ["float32", "float64", "f32+f32"])
def test_the_model_gives_the_runtime_gradients(kind: str) -> None:
    fns = make_functions(6, 8, seed=3)
    gen = torch.Generator().manual_seed(5)
    x, w = torch.randn(2, 8, 4, 4, generator=gen), torch.randn(2, 8, 4, 4, generator=gen)
    ours = cs.reversible_grads(fns, x, w, cs.KINDS[kind])
    runtime = _runtime_grads(fns, x, w, cs.KINDS[kind].wide or "float32x2")
    assert torch.allclose(ours, runtime, rtol=1e-5, atol=1e-7)


def test_a_float32_correction_rebuilds_like_a_float64_stream() -> None:
    fns = make_functions(6, 8, seed=4)
    gen = torch.Generator().manual_seed(6)
    x, w = torch.randn(2, 8, 4, 4, generator=gen), torch.randn(2, 8, 4, 4, generator=gen)
    wide = cs.reversible_grads(fns, x, w, cs.KINDS["float64"])
    pair = cs.reversible_grads(fns, x, w, cs.KINDS["f32+f32"])
    ref = cs.plain_grads(fns, x, w, torch.float64)
    assert float((pair - ref).norm() / ref.norm()) <= 1.01 * float((wide - ref).norm() / ref.norm())


def test_the_correction_holds_the_rounding_error_exactly() -> None:
    kind = cs.KINDS["f32+f32"]
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(1000, generator=gen) * 1e3
    f = torch.randn(1000, generator=gen) * 1e-3
    hi, lo = kind.add(kind.make(x), f, 1)
    exact = x.double() + f.double()
    assert torch.equal(hi.double() + lo.double(), exact)  # hi + lo is the float64 sum
    assert torch.equal(hi, exact.float())  # and hi its float32 rounding (renormalised)
    assert not torch.equal(lo, torch.zeros_like(lo))
