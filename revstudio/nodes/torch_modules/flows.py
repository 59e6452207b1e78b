"""Invertible flow layers: channel permutation, axis reorder, Glow's 1x1 convolution, ActNorm, squeeze.

Each has ``forward(x) -> (y,)`` and ``inverse(y) -> (x,)``; volume-changing ones
store the per-sample log-determinant of their last forward in ``self.logdet``.
Torch only: this file is inlined verbatim into exported code.
"""

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

Tensors = tuple[torch.Tensor, ...]


def _spatial_size(x: torch.Tensor) -> int:
    """Number of positions per channel (1 for a (B, C) tensor)."""
    n = 1
    for s in x.shape[2:]:
        n *= s
    return n


def _mix_channels(weight: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Apply a (C, C) matrix to the channel axis of (B, C, ...)."""
    return torch.einsum("ij,bj...->bi...", weight, x)


def _mix_channels_dense(weight: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """:func:`_mix_channels` into a new buffer dense in ``x``'s layout, with no copy of ``x``,
    where no gradient is taken (a reversible region's backward rebuilds its streams so). The
    einsum multiplies a channels-first copy of its input and hands back a view of that product
    (neither contiguous nor channels_last from a batch of two on), and a region updates in place
    only a dense buffer of its own: after this layer's inverse, every update backward ran made
    new buffers and TwoSum's temporaries beside the whole rebuilt stream (random network 72's
    peak at batch 8, 4.4 % over its estimate)."""
    if x.dim() < 2 or (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)):
        return _mix_channels(weight, x)
    if x.dim() == 2:
        return torch.mm(x, weight.t())
    b, c = x.shape[0], x.shape[1]
    if x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last):
        y = torch.empty_like(x, memory_format=torch.channels_last)  # each position's channels times W^T
        torch.mm(x.permute(0, 2, 3, 1).reshape(-1, c), weight.t(), out=y.permute(0, 2, 3, 1).view(-1, c))
        return y
    if not x.is_contiguous():
        return _mix_channels(weight, x)
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    torch.bmm(weight.expand(b, c, c), x.view(b, c, -1), out=y.view(b, c, -1))
    return y


class Permute(nn.Module):
    """A fixed channel permutation: reversed, or shuffled reproducibly from ``seed``."""

    perm: torch.Tensor
    inverse_perm: torch.Tensor

    def __init__(self, channels: int, kind: str = "shuffle", seed: int = 0) -> None:
        super().__init__()
        if kind == "reverse":
            perm = torch.arange(channels - 1, -1, -1)
        else:
            generator = torch.Generator().manual_seed(seed)
            perm = torch.randperm(channels, generator=generator)
        # not persistent: the permutation is a function of (kind, seed), not a weight
        self.register_buffer("perm", perm, persistent=False)
        self.register_buffer("inverse_perm", torch.argsort(perm), persistent=False)

    def forward(self, x: torch.Tensor) -> Tensors:
        return (_select_channels(x, self.perm),)

    def inverse(self, y: torch.Tensor) -> Tensors:
        return (_select_channels(y, self.inverse_perm),)


class PermuteAxes(nn.Module):
    """An axis reorder: output axis ``i`` is input axis ``dims[i]`` (batch axis fixed), so data
    held as (time, features) reads as (features, time). The output is a view of the input (no
    copy); its inverse applies the inverse order, so ``inverse(forward(x))`` is ``x`` exactly."""

    def __init__(self, dims: tuple[int, ...] | list[int]) -> None:
        super().__init__()
        self.dims = tuple(int(d) for d in dims)
        self.inverse_dims = tuple(sorted(range(len(self.dims)), key=self.dims.__getitem__))

    def forward(self, x: torch.Tensor) -> Tensors:
        return (x.permute(0, *(d + 1 for d in self.dims)),)

    def inverse(self, y: torch.Tensor) -> Tensors:
        return (y.permute(0, *(d + 1 for d in self.inverse_dims)),)


def _select_channels(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``x.index_select(1, index)`` in ``x``'s memory layout. index_select always returns the
    usual layout: a channels_last stream (a reversible region's on the CPU) would come out of a
    permutation in another layout than went in, and a coupling's net would read its input in
    one layout in forward and in the other when backward rebuilds it (oneDNN's convolutions
    differ in the last bits between layouts, so the rebuild would not be exact). Selected
    along the last axis of the channels-last view instead: one output, the same values."""
    if x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last):
        return x.permute(0, 2, 3, 1).index_select(3, index).permute(0, 3, 1, 2)
    return x.index_select(1, index)


class InvConv1x1(nn.Module):
    """Glow's invertible 1x1 convolution: a learned (C, C) channel-mixing matrix.

    With ``lu`` the matrix is W = P L (U + diag(sign * exp(log_s))), stored as one
    (C, C) parameter ``lu`` (L strictly below the diagonal, U strictly above,
    log_s on it), so log|det W| = sum(log_s) is cheap and W stays invertible.
    Starts as a random rotation drawn from the global torch RNG.
    """

    p: torch.Tensor
    sign: torch.Tensor

    def __getstate__(self) -> dict[str, Any]:
        # a copy (deepcopy, pickle; AveragedModel deep-copies) starts without the last forward's
        # logdet, as a new layer does: it is part of that forward's graph, which deepcopy refuses
        return {**super().__getstate__(), "logdet": None}

    def __init__(self, channels: int, lu: bool = True) -> None:
        super().__init__()
        q, _ = torch.linalg.qr(torch.randn(channels, channels))
        self.use_lu = lu
        self.logdet: torch.Tensor | None = None
        if lu:
            p, lower, upper = torch.linalg.lu(q)
            diag = torch.diagonal(upper)
            packed = torch.tril(lower, -1) + torch.triu(upper, 1) + torch.diag(torch.log(diag.abs()))
            self.lu = nn.Parameter(packed)
            self.register_buffer("p", p)
            self.register_buffer("sign", torch.sign(diag))
        else:
            self.weight = nn.Parameter(q)

    def matrix(self) -> torch.Tensor:
        if not self.use_lu:
            return self.weight
        eye = torch.eye(self.lu.shape[0], dtype=self.lu.dtype, device=self.lu.device)
        lower = torch.tril(self.lu, -1) + eye
        upper = torch.triu(self.lu, 1) + torch.diag(self.sign * torch.exp(torch.diagonal(self.lu)))
        return self.p @ lower @ upper

    def log_abs_det(self) -> torch.Tensor:
        if self.use_lu:
            return torch.diagonal(self.lu).sum()
        return torch.linalg.slogdet(_solvable(self.weight))[1].to(self.weight.dtype)

    def forward(self, x: torch.Tensor) -> Tensors:
        y = _mix_channels(self.matrix(), x)
        self.logdet = (self.log_abs_det() * _spatial_size(x)).expand(x.shape[0])
        return (y,)

    def inverse(self, y: torch.Tensor) -> Tensors:
        # (in y's dtype: under autocast the matrix comes out of a bfloat16 matmul, while the
        # stream it mixes stays float32, as linalg.inv's own float32 result has it)
        w = _solvable(self.matrix())
        inv = torch.linalg.inv(w)
        if not self.use_lu and ill_conditioned(w, inv):  # (an LU weight's diagonal keeps it invertible)
            raise torch.linalg.LinAlgError(
                f"linalg.inv: the {w.shape[0]}x{w.shape[0]} matrix is nearly singular in "
                f"{str(w.dtype).replace('torch.', '')}: its inverse would keep too few correct digits")
        return (_mix_channels_dense(inv.to(y.dtype), y),)


# A plain (lu=false) matrix whose 1-norm condition number times its dtype's epsilon passes this is
# refused: its float32 inverse is wrong in the second digit (two rows 1e-6 apart: condition 1e6,
# |inv(W) W - I| 0.06 to 0.34 at 12 to 192 channels, measured), and linalg.inv raises only at an
# exact zero pivot, so backward returned finite, wrong gradients. float32: condition over ~8e4.
ILL_CONDITIONED = 1e-2


def ill_conditioned(w: torch.Tensor, inv: torch.Tensor | None = None) -> bool:
    """Whether ``w``'s inverse has too few correct digits to rebuild a layer's input: its 1-norm
    condition estimate ``|W|_1 |inv(W)|_1`` from the inverse backward makes anyway (two C x C
    norms, no factorisation: a few microseconds beside the inverse's 20 to 2,000)."""
    inv = torch.linalg.inv_ex(w)[0] if inv is None else inv
    cond = torch.linalg.matrix_norm(w, 1) * torch.linalg.matrix_norm(inv, 1)
    return not bool(cond * torch.finfo(w.dtype).eps <= ILL_CONDITIONED)


def _solvable(w: torch.Tensor) -> torch.Tensor:
    """``w`` in a dtype torch.linalg solves in: float16/bfloat16 weights (a model compiled in
    half precision) are inverted in float32, which linalg.inv and slogdet refuse them in."""
    return w.float() if w.dtype in (torch.float16, torch.bfloat16) else w


class ActNorm(nn.Module):
    """Per-channel affine map y = (x + bias) * exp(log_scale) with data-dependent init.

    ``initialize(x)`` sets bias and scale so the first batch comes out with zero
    mean and unit variance per channel, once; the ``initialized`` buffer records
    it (and travels in checkpoints). ``forward`` runs it itself if nobody has.
    """

    initialized: torch.Tensor

    def __getstate__(self) -> dict[str, Any]:
        # a copy (deepcopy, pickle; AveragedModel deep-copies) starts without the last forward's
        # logdet, as a new layer does: it is part of that forward's graph, which deepcopy refuses
        return {**super().__getstate__(), "logdet": None}

    def __init__(self, channels: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.bias = nn.Parameter(torch.zeros(channels))
        self.log_scale = nn.Parameter(torch.zeros(channels))
        # uint8 rather than bool: every distributed backend can broadcast it (DDP syncs buffers)
        self.register_buffer("initialized", torch.zeros((), dtype=torch.uint8))
        self.logdet: torch.Tensor | None = None
        # Python-side cache of the buffer, so forward does not sync with the device each call
        self._known_initialized = False

    def _view(self, p: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return p.reshape(1, -1, *([1] * (x.dim() - 2)))

    @torch.no_grad()
    def initialize(self, x: torch.Tensor) -> None:
        # statistics in the parameters' precision, also when x comes from autocast (bf16/fp16)
        per_channel = x.transpose(0, 1).reshape(x.shape[1], -1).to(self.bias.dtype)
        self.bias.copy_(-per_channel.mean(1))
        if per_channel.shape[1] > 1:  # one value per channel has no spread to normalise
            std = per_channel.std(1, unbiased=False)
            self.log_scale.copy_(-torch.log(std + self.eps))
        self.initialized.fill_(1)
        self._known_initialized = True

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        super()._load_from_state_dict(*args, **kwargs)
        # read the loaded flag now, on a real tensor: torch.export traces forward with fake ones,
        # whose values cannot be read (a buffer on the meta device is read on the next forward)
        self._known_initialized = self.initialized.device.type != "meta" and bool(self.initialized)

    def forward(self, x: torch.Tensor) -> Tensors:
        if not self._known_initialized:
            if not bool(self.initialized):
                self.initialize(x)
            self._known_initialized = True
        y = (x + self._view(self.bias, x)) * torch.exp(self._view(self.log_scale, x))
        self.logdet = (self.log_scale.sum() * _spatial_size(x)).expand(x.shape[0])
        return (y,)

    def inverse(self, y: torch.Tensor) -> Tensors:
        return (y * torch.exp(-self._view(self.log_scale, y)) - self._view(self.bias, y),)


class Squeeze(nn.Module):
    """Space-to-depth: (B, C, H, W) -> (B, C*f*f, H/f, W/f), or (B, C, L) -> (B, C*f, L/f)."""

    def __init__(self, factor: int = 2) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x: torch.Tensor) -> Tensors:
        f = self.factor
        if x.dim() == 4:
            return (F.pixel_unshuffle(x, f),)
        b, c, length = x.shape
        return (x.reshape(b, c, length // f, f).transpose(2, 3).reshape(b, c * f, length // f),)

    def inverse(self, y: torch.Tensor) -> Tensors:
        f = self.factor
        if y.dim() == 4:
            return (F.pixel_shuffle(y, f),)
        b, cf, steps = y.shape
        return (y.reshape(b, cf // f, f, steps).transpose(2, 3).reshape(b, cf // f, steps * f),)
