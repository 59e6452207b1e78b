"""The torch module of HaarDownsample (imported by name in exported code).

``forward(x) -> (y,)`` and ``inverse(y) -> (x,)``, batch first, like every
revstudio module. The transform is orthonormal, so it has no log-determinant.
"""
from __future__ import annotations

import torch
from torch import nn


class HaarDownsample(nn.Module):
    """(B, C, H, W) -> (B, 4C, H/2, W/2): per channel the average and three detail bands."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.channels = channels

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor]:
        a = x[:, :, 0::2, 0::2]
        b = x[:, :, 0::2, 1::2]
        c = x[:, :, 1::2, 0::2]
        d = x[:, :, 1::2, 1::2]
        low = (a + b + c + d) / 2
        horizontal = (a - b + c - d) / 2
        vertical = (a + b - c - d) / 2
        diagonal = (a - b - c + d) / 2
        return (torch.cat([low, horizontal, vertical, diagonal], dim=1),)

    def inverse(self, y: torch.Tensor) -> tuple[torch.Tensor]:
        low, horizontal, vertical, diagonal = torch.chunk(y, 4, dim=1)
        a = (low + horizontal + vertical + diagonal) / 2
        b = (low - horizontal + vertical - diagonal) / 2
        c = (low + horizontal - vertical - diagonal) / 2
        d = (low - horizontal - vertical + diagonal) / 2
        batch, channels, h, w = a.shape
        x = y.new_empty(batch, channels, 2 * h, 2 * w)
        x[:, :, 0::2, 0::2] = a
        x[:, :, 0::2, 1::2] = b
        x[:, :, 1::2, 0::2] = c
        x[:, :, 1::2, 1::2] = d
        return (x,)
