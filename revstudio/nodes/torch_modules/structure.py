"""Structural nodes: identity, flatten, reshape, split, concat and merge.

All follow the tuple convention; the bijective ones also define ``inverse``.
Dimension arguments count non-batch axes (0 = channels). Torch only: this file
is inlined verbatim into exported code.
"""

import torch
from torch import nn

Tensors = tuple[torch.Tensor, ...]


class Identity(nn.Module):
    """Passes its inputs through (Input, Output and group boundary nodes)."""

    def forward(self, *xs: torch.Tensor) -> Tensors:
        return tuple(xs)

    def inverse(self, *ys: torch.Tensor) -> Tensors:
        return tuple(ys)


class Flatten(nn.Module):
    """(B, *in_shape) -> (B, prod(in_shape)); the inverse restores the shape."""

    def __init__(self, in_shape: tuple[int, ...] | list[int]) -> None:
        super().__init__()
        self.in_shape = tuple(in_shape)

    def forward(self, x: torch.Tensor) -> Tensors:
        return (x.reshape(x.shape[0], -1),)

    def inverse(self, y: torch.Tensor) -> Tensors:
        return (y.reshape(y.shape[0], *self.in_shape),)


class Reshape(nn.Module):
    """(B, *in_shape) -> (B, *out_shape) with the same number of values."""

    def __init__(self, in_shape: tuple[int, ...] | list[int], out_shape: tuple[int, ...] | list[int]) -> None:
        super().__init__()
        self.in_shape = tuple(in_shape)
        self.out_shape = tuple(out_shape)

    def forward(self, x: torch.Tensor) -> Tensors:
        return (x.reshape(x.shape[0], *self.out_shape),)

    def inverse(self, y: torch.Tensor) -> Tensors:
        return (y.reshape(y.shape[0], *self.in_shape),)


class Split(nn.Module):
    """Cuts one tensor into pieces of ``sizes`` along ``dim``; the pieces are views."""

    def __init__(self, sizes: tuple[int, ...] | list[int], dim: int = 0) -> None:
        super().__init__()
        self.sizes = [int(s) for s in sizes]
        self.dim = dim

    def forward(self, x: torch.Tensor) -> Tensors:
        return tuple(torch.split(x, self.sizes, dim=self.dim + 1))

    def inverse(self, *ys: torch.Tensor) -> Tensors:
        return (torch.cat(ys, dim=self.dim + 1),)


class Concat(nn.Module):
    """Joins tensors along ``dim``; ``sizes`` (each input's extent) make it invertible."""

    def __init__(self, sizes: tuple[int, ...] | list[int], dim: int = 0) -> None:
        super().__init__()
        self.sizes = [int(s) for s in sizes]
        self.dim = dim

    def forward(self, *xs: torch.Tensor) -> Tensors:
        return (torch.cat(xs, dim=self.dim + 1),)

    def inverse(self, y: torch.Tensor) -> Tensors:
        return tuple(torch.split(y, self.sizes, dim=self.dim + 1))


class Merge(nn.Module):
    """Combines n inputs: add, sub (in0 - in1 - ...), mul, mean, max, concat or stack.

    concat joins along the channel axis; stack adds a new axis right after the batch.
    """

    def __init__(self, mode: str = "add") -> None:
        super().__init__()
        if mode not in ("add", "sub", "mul", "mean", "max", "concat", "stack"):
            raise ValueError(f"unknown merge mode {mode!r}")
        self.mode = mode

    def forward(self, *xs: torch.Tensor) -> Tensors:
        mode = self.mode
        if mode == "concat":
            return (torch.cat(xs, dim=1),)
        if mode == "stack":
            return (torch.stack(xs, dim=1),)
        out = xs[0]
        for x in xs[1:]:
            if mode in ("add", "mean"):
                out = out + x
            elif mode == "sub":
                out = out - x
            elif mode == "mul":
                out = out * x
            else:
                out = torch.maximum(out, x)
        if mode == "mean":
            out = out / len(xs)
        return (out,)

    def extra_repr(self) -> str:
        return f"mode={self.mode!r}"
