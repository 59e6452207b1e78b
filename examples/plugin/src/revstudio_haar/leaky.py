"""The torch module of InvertibleLeakyReLU. Torch only, so exports may copy it.

``__revstudio_inline__ = True`` tells revstudio's exporter that this file's
definitions can be pasted into a standalone model file (it imports only torch).
"""
from __future__ import annotations

import math

import torch
from torch import nn

__revstudio_inline__ = True


class InvertibleLeakyReLU(nn.Module):
    """y = x (x >= 0), slope * x (x < 0); log|dy/dx| = log(slope) per negative element."""

    def __init__(self, slope: float = 0.1) -> None:
        super().__init__()
        self.slope = slope
        self.logdet: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor]:
        negative = x < 0
        self.logdet = negative.flatten(1).sum(1).to(x.dtype) * math.log(self.slope)
        return (torch.where(negative, x * self.slope, x),)

    def inverse(self, y: torch.Tensor) -> tuple[torch.Tensor]:
        return (torch.where(y < 0, y / self.slope, y),)
