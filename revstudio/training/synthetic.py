"""Synthetic data (``--data synthetic``): a learnable task for any graph, from the seed alone.

- classification: class-conditional patterns (per class a channel offset plus a
  spatial pattern, under unit noise); for sequence models (a BiRNN reads the
  Input) sinusoids whose frequency and per-feature amplitude depend on the class;
  for a class per step or pixel (a C x T, C x H x W Output) each one's class from its features by a
  fixed random map;
- regression: a fixed random teacher: a channel mix and tanh when the Output has
  the Input's shape (learnable by convolutions), else a one-hidden-layer tanh MLP
  over the flattened inputs;
- flow: two moons for a 2-D Input, else a structured density (a mixture of four
  centres plus low-rank correlated noise).

Every draw comes from one ``torch.Generator`` seeded with the seed, in a fixed
order, so the same seed gives the same tensors here and in an exported script
(which carries this file verbatim: torch only, no revstudio imports). The sample
count keeps inputs and targets under ``SYNTHETIC_BYTES`` (at most 4096 samples).
"""
from __future__ import annotations

import math
from typing import Any

SYNTHETIC_BYTES = 48 << 20
SYNTHETIC_MAX = 4096
SYNTHETIC_MIN = 32


def synthetic_count(specs: dict[str, tuple[tuple[int, ...], str]], kind: str, out_shape: tuple[int, ...]) -> int:
    """How many samples: a few thousand for small shapes, fewer (bounded bytes) for large ones."""
    per_sample = sum(4 * math.prod(shape) for shape, _ in specs.values())
    labels = math.prod(out_shape[1:]) if kind == "classification" else 1  # (a class per step: T, per pixel: H x W)
    per_sample += 4 * math.prod(out_shape) if kind == "regression" else 8 * labels
    return int(min(SYNTHETIC_MAX, max(SYNTHETIC_MIN, SYNTHETIC_BYTES // max(per_sample, 1))))


def synthetic(specs: dict[str, tuple[tuple[int, ...], str]], *, kind: str, num_classes: int | None,
              out_shape: tuple[int, ...], seed: int, sequence: bool = False,
              count: int | None = None) -> tuple[dict[str, Any], Any]:
    """``(inputs by Input node id, targets or None)`` for the task ``kind``."""
    import torch

    g = torch.Generator().manual_seed(int(seed))
    n = count if count is not None else synthetic_count(specs, kind, out_shape)
    inputs: dict[str, Any] = {}
    targets: Any = None
    axes = len(out_shape) - 1  # (a class per step: T, per pixel: H x W, per voxel: D x H x W, the Input's last axes)
    per_step = kind == "classification" and axes >= 1 and len(specs) == 1 and \
        len(next(iter(specs.values()))[0]) >= axes and tuple(next(iter(specs.values()))[0])[-axes:] == tuple(out_shape[1:])
    if per_step:  # a class per position (a C x T, C x H x W ... Output): each one's class from its features by a fixed map
        node, (shape, _) = next(iter(specs.items()))
        inputs[node] = torch.randn(n, *shape, generator=g)
        k, features = int(num_classes or out_shape[0]), math.prod(shape[:-axes])
        flat = inputs[node].reshape(n, features, -1)
        if len(shape) == axes:  # (an Input of the positions alone, e.g. D slices read as channels: K bands of its value)
            bands = torch.special.ndtri(torch.arange(1, k, dtype=torch.float32) / k)
            targets = torch.bucketize(flat[:, 0].contiguous(), bands).reshape(n, *out_shape[1:])
        else:
            mix = torch.randn(k, features, generator=g)
            targets = torch.einsum("kf,nft->nkt", mix, flat).argmax(dim=1).reshape(n, *out_shape[1:])
    elif kind == "classification":
        k = int(num_classes or 2)
        targets = (torch.arange(n) % k)[torch.randperm(n, generator=g)]
        for node, (shape, _) in specs.items():
            if sequence and len(shape) >= 2:
                inputs[node] = _class_sequences(targets, k, tuple(shape), g)
            else:
                inputs[node] = _class_patterns(targets, k, tuple(shape), g)
    elif kind == "flow":
        for node, (shape, _) in specs.items():
            inputs[node] = _moons(n, g) if tuple(shape) == (2,) else _structured(n, tuple(shape), g)
    else:
        for node, (shape, _) in specs.items():
            inputs[node] = torch.randn(n, *shape, generator=g)
        targets = _teacher(list(inputs.values()), [tuple(s) for s, _ in specs.values()], tuple(out_shape), g)
    for node, (_, dtype) in specs.items():
        if dtype == "float64":
            inputs[node] = inputs[node].to(torch.float64)
    return inputs, targets


def _class_patterns(y: Any, k: int, shape: tuple[int, ...], g: Any) -> Any:
    import torch

    n = len(y)
    channels = shape[0] if shape else 1
    # a per-class offset of each channel survives global pooling; the spatial part rewards convolutions
    offset = torch.randn(k, channels, generator=g).reshape(k, channels, *([1] * (len(shape) - 1)))
    pattern = 0.5 * torch.randn(k, *shape, generator=g)
    proto = offset + pattern
    return proto[y] + torch.randn(n, *shape, generator=g)


def _class_sequences(y: Any, k: int, shape: tuple[int, ...], g: Any) -> Any:
    import torch

    n, length = len(y), shape[-1]
    features = math.prod(shape[:-1])
    step = max(1, (length // 2 - 1) // max(k, 1))
    cycles = 1.0 + step * torch.arange(k, dtype=torch.float32)          # below the Nyquist limit
    amplitude = 0.5 + torch.rand(k, features, generator=g)               # which features carry it
    phase = 2 * math.pi * torch.rand(n, features, generator=g)
    t = torch.arange(length, dtype=torch.float32) / length
    wave = torch.sin(2 * math.pi * cycles[y][:, None, None] * t + phase[:, :, None])
    x = amplitude[y][:, :, None] * wave + 0.3 * torch.randn(n, features, length, generator=g)
    return x.reshape(n, *shape)


def _teacher(xs: list[Any], shapes: list[tuple[int, ...]], out_shape: tuple[int, ...], g: Any) -> Any:
    import torch

    n = len(xs[0])
    if len(xs) == 1 and shapes[0] == out_shape and len(out_shape) >= 1:
        channels = out_shape[0]
        mix = torch.randn(channels, channels, generator=g) / math.sqrt(channels)
        bias = 0.1 * torch.randn(channels, generator=g).reshape(channels, *([1] * (len(out_shape) - 1)))
        return torch.tanh(torch.einsum("ij,nj...->ni...", mix, xs[0]) + bias)
    flat = torch.cat([x.reshape(n, -1) for x in xs], dim=1)
    hidden = 32
    w1 = torch.randn(flat.shape[1], hidden, generator=g) / math.sqrt(flat.shape[1])
    b1 = 0.1 * torch.randn(hidden, generator=g)
    w2 = torch.randn(hidden, max(1, math.prod(out_shape)), generator=g) / math.sqrt(hidden)
    return (torch.tanh(flat @ w1 + b1) @ w2).reshape(n, *out_shape)


def _moons(n: int, g: Any) -> Any:
    import torch

    t = math.pi * torch.rand(n, generator=g)
    upper = torch.arange(n) < n // 2
    x = torch.where(upper, torch.cos(t), 1.0 - torch.cos(t))
    y = torch.where(upper, torch.sin(t), 0.5 - torch.sin(t))
    pts = torch.stack([x - 0.5, y - 0.25], dim=1) + 0.05 * torch.randn(n, 2, generator=g)
    return pts[torch.randperm(n, generator=g)]


def _structured(n: int, shape: tuple[int, ...], g: Any) -> Any:
    import torch

    d = max(1, math.prod(shape))
    rank = min(8, d)
    centres = 0.7 * torch.randn(4, d, generator=g)
    basis = 0.7 * torch.randn(rank, d, generator=g) / math.sqrt(rank)
    which = torch.randint(4, (n,), generator=g)
    z = torch.randn(n, rank, generator=g)
    x = centres[which] + z @ basis + 0.1 * torch.randn(n, d, generator=g)
    return x.reshape(n, *shape)
