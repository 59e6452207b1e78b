"""Nodes made of group bodies: Group, Repeat and the coupling blocks.

Bodies are modules with the tuple convention (the compiler builds them from the
project's groups). Couplings split the channel axis into x1 (the first ``split``
channels) and x2 (the rest). Torch only: this file is inlined verbatim into exported code.
"""

from typing import Any

import torch
from torch import nn

Tensors = tuple[torch.Tensor, ...]


def _inverse_of(module: nn.Module, what: str) -> Any:  # the bound inverse method
    inverse = getattr(module, "inverse", None)
    if inverse is None:
        raise NotImplementedError(f"{what} has no inverse: its body contains a non-invertible node")
    return inverse


def _is_flow(part: nn.Module) -> bool:
    flow = getattr(part, "flow", None)
    return flow if isinstance(flow, bool) else hasattr(part, "logdet")


def _sum_logdets(parts: Any) -> torch.Tensor | None:
    found = [p.logdet for p in parts if _is_flow(p) and isinstance(p.logdet, torch.Tensor)]
    return torch.stack(found).sum(0) if found else None


class GroupCall(nn.Module):
    """Runs a group body once."""

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, *xs: torch.Tensor) -> Tensors:
        return tuple(self.body(*xs))

    def inverse(self, *ys: torch.Tensor) -> Tensors:
        return tuple(_inverse_of(self.body, "this group")(*ys))

    @property
    def flow(self) -> bool:
        return _is_flow(self.body)

    @property
    def logdet(self) -> torch.Tensor | None:
        """log|det| of the body's flow layers in the last forward that ran it (per sample)."""
        return _sum_logdets([self.body])


class Repeat(nn.Module):
    """Runs several copies of a body in sequence, each with its own weights."""

    def __init__(self, blocks: list[nn.Module]) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, *xs: torch.Tensor) -> Tensors:
        for block in self.blocks:
            xs = tuple(block(*xs))
        return tuple(xs)

    def inverse(self, *ys: torch.Tensor) -> Tensors:
        for block in reversed(self.blocks):
            ys = tuple(_inverse_of(block, "this repeated group")(*ys))
        return tuple(ys)

    @property
    def flow(self) -> bool:
        return any(_is_flow(b) for b in self.blocks)

    @property
    def logdet(self) -> torch.Tensor | None:
        """log|det| of all copies' flow layers in the last forward that ran them (per sample)."""
        return _sum_logdets(self.blocks)


class AdditiveCoupling(nn.Module):
    """RevNet/NICE coupling: y1 = x1 + F(x2), y2 = x2 + G(y1); output = cat(y1, y2).

    Without ``g`` the second half passes unchanged (y2 = x2). Volume preserving,
    so ``logdet`` is zero.
    """

    def __getstate__(self) -> dict[str, Any]:
        # a copy (deepcopy, pickle; AveragedModel deep-copies) starts without the last forward's
        # logdet, as a new layer does: it is part of that forward's graph, which deepcopy refuses
        return {**super().__getstate__(), "logdet": None}

    def __init__(self, split: int, f: nn.Module, g: nn.Module | None = None) -> None:
        super().__init__()
        self.split = split
        self.f = f
        self.g = g
        self.logdet: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> Tensors:
        x1, x2 = x[:, : self.split], x[:, self.split :]
        y1 = x1 + self.f(x2)[0]
        y2 = x2 + self.g(y1)[0] if self.g is not None else x2
        self.logdet = x.new_zeros(x.shape[0])
        return (torch.cat((y1, y2), dim=1),)

    def inverse(self, y: torch.Tensor) -> Tensors:
        y1, y2 = y[:, : self.split], y[:, self.split :]
        x2 = y2 - self.g(y1)[0] if self.g is not None else y2
        x1 = y1 - self.f(x2)[0]
        return (torch.cat((x1, x2), dim=1),)


class AffineCoupling(nn.Module):
    """RealNVP/Glow coupling: y1 = x1, y2 = x2 * exp(s) + t with (s, t) from net(x1).

    ``net`` outputs twice the channels of x2: the first half is the raw
    log-scale, the second the shift. ``clamp > 0`` softly bounds the log-scale to
    (-clamp, clamp) with clamp * tanh(s / clamp). ``logdet`` = sum of s per sample.
    """

    def __getstate__(self) -> dict[str, Any]:
        # a copy (deepcopy, pickle; AveragedModel deep-copies) starts without the last forward's
        # logdet, as a new layer does: it is part of that forward's graph, which deepcopy refuses
        return {**super().__getstate__(), "logdet": None}

    def __init__(self, split: int, net: nn.Module, clamp: float = 2.0) -> None:
        super().__init__()
        self.split = split
        self.net = net
        self.clamp = clamp
        self.logdet: torch.Tensor | None = None

    def _scale_shift(self, x1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.net(x1)[0]
        half = h.shape[1] // 2
        log_scale, shift = h[:, :half], h[:, half:]
        if self.clamp > 0:
            log_scale = self.clamp * torch.tanh(log_scale / self.clamp)
        return log_scale, shift

    def forward(self, x: torch.Tensor) -> Tensors:
        x1, x2 = x[:, : self.split], x[:, self.split :]
        log_scale, shift = self._scale_shift(x1)
        y2 = x2 * torch.exp(log_scale) + shift
        self.logdet = log_scale.flatten(1).sum(1)
        return (torch.cat((x1, y2), dim=1),)

    def inverse(self, y: torch.Tensor) -> Tensors:
        y1, y2 = y[:, : self.split], y[:, self.split :]
        log_scale, shift = self._scale_shift(y1)
        return (torch.cat((y1, (y2 - shift) * torch.exp(-log_scale)), dim=1),)
