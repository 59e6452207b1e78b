"""The pieces a run is made of, built from a :class:`TrainConfig`: device, precision, optimizer,
learning-rate schedule and the loss of the task.

Schedules are one ``LambdaLR`` with a plain function (its state_dict is then
just numbers, so checkpoints load with ``weights_only=True``): a linear
warm-up over ``warmup_steps``, then constant, a cosine to zero, or one-cycle
(up from lr/25 over the warm-up, or the first 30 % of the run without one,
then a cosine down to lr/10^4, as in Smith's one-cycle policy).
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from .config import ConfigError, TrainConfig


class TrainError(Exception):
    """A run that cannot start or continue; ``code`` is the CLI exit code (1 run failed, 2 bad usage)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def resolve_device(name: str, local_rank: int | None = None) -> torch.device:
    """'auto' or any device torch names ('cpu', 'cuda:1', 'mps', 'xpu') -> a device this machine has
    (a bare 'cuda' under torchrun: this rank's GPU), as ``rs.compile`` checks it (``compiler.devices``)."""
    from revstudio.compiler.devices import flag_refusal, usable_device

    try:
        return usable_device(name, local_rank or 0)
    except (RuntimeError, ValueError) as exc:  # (also a name training.device let through that torch refuses)
        raise TrainError(flag_refusal(name, exc), 2) from None


def precision_context(cfg: TrainConfig, device: torch.device) -> tuple[Callable[[], Any], Any]:
    """(a context manager factory for the forward pass, a GradScaler or None)."""
    if cfg.precision == "fp16" and device.type != "cuda":
        raise TrainError("precision fp16 needs a CUDA device (autocast with a GradScaler); on the CPU use "
                         "--precision bf16 or fp32", 2)
    if cfg.precision == "fp32":
        return contextlib.nullcontext, None
    dtype = torch.bfloat16 if cfg.precision == "bf16" else torch.float16
    scaler = torch.amp.GradScaler("cuda") if cfg.precision == "fp16" else None
    return (lambda: torch.autocast(device_type=device.type, dtype=dtype)), scaler


def make_optimizer(cfg: TrainConfig, params: Any) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    raise ConfigError(f"training.optimizer: {cfg.optimizer!r} is not known", "optimizer")  # pragma: no cover


def lr_factor(schedule: str, warmup: int, total: int) -> Callable[[int], float]:
    """The multiplier of the base learning rate after ``step`` optimizer steps."""
    total = max(1, total)

    def cosine(progress: float, floor: float) -> float:
        progress = min(1.0, max(0.0, progress))
        return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))

    def factor(step: int) -> float:
        if schedule == "onecycle":
            rise = warmup if warmup > 0 else max(1, int(0.3 * total))
            if step < rise:
                return 1.0 / 25 + (1.0 - 1.0 / 25) * step / rise
            return cosine((step - rise) / max(1, total - rise), 1e-4)
        if step < warmup:
            return (step + 1) / (warmup + 1)
        if schedule == "cosine":
            return cosine((step - warmup) / max(1, total - warmup), 0.0)
        return 1.0

    return factor


def make_scheduler(cfg: TrainConfig, optimizer: torch.optim.Optimizer, total: int) -> Any:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor(cfg.schedule, cfg.warmup_steps, total))


LN2 = math.log(2.0)


def dequantize(x: torch.Tensor, levels: int, seed: int) -> torch.Tensor:
    """8-bit images read as ``k / 255`` turned into continuous values ``(k + u) / levels``, ``u`` uniform
    in [0, 1) from a generator seeded with ``seed``: a flow fitted to the discrete values themselves
    piles its density onto them and its bits per dimension fall without bound."""
    noise = torch.rand(x.shape, generator=torch.Generator().manual_seed(seed % 2**63), dtype=x.dtype)
    return (x * (levels - 1)).round().add_(noise.to(x.device)).div_(levels)


def noise_seed(seed: int, step: int, rank: int) -> int:
    """The dequantisation noise's seed of a training batch (step >= 0) or a validation batch (step < 0)."""
    return (seed * 1_000_003 + step) * 4099 + rank


class Loss:
    """The loss of a task: ``value(output, targets, logdet) -> (loss, correct or None)``; classification
    reads N x C scores for N labels, or N x C x T for N x T labels (a class per step, -100 not scored). A flow on
    data of ``levels`` values per dimension (dequantised) adds ``log2(levels)`` bits per dimension:
    the bits of the discrete data, an upper bound the continuous density gives."""

    def __init__(self, kind: str, levels: int | None = None) -> None:
        self.kind = kind
        self.levels = levels

    def counted(self, targets: torch.Tensor | None, samples: int) -> int:
        """How many predictions the loss is the mean of: the scored steps (labels other than -100) of
        per-step labels, else the ``samples`` (a run's loss and accuracy weigh its batches by it)."""
        if self.kind == "classification" and targets is not None and targets.dim() > 1:
            return int((targets != -100).sum())
        return samples

    def __call__(self, output: torch.Tensor, targets: torch.Tensor | None,
                 logdet: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self.kind == "classification":  # (N x C x T scores for N x T labels: a class per step)
            assert targets is not None
            logits = output.float()
            loss = F.cross_entropy(logits, targets, ignore_index=-100)  # a label of -100: a step not scored
            correct = ((logits.detach().argmax(dim=1) == targets) & (targets != -100)).sum()
            return loss, correct
        if self.kind == "regression":
            return F.mse_loss(*self._regression_pair(output, targets)), None
        bits = self._bits_per_dim(output, logdet).mean()
        return (bits + math.log2(self.levels) if self.levels else bits), None

    def per_sample(self, output: torch.Tensor, targets: torch.Tensor | None,
                   logdet: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(each sample's summed loss, the predictions it is the sum of)``, two float64 N vectors: the
        loss of :meth:`__call__` is ``sum(first) / sum(second)`` (a per-step sample's scored steps; one
        prediction a sample otherwise), so ``revstudio evaluate`` ranks samples by the very loss training
        reads."""
        n = output.shape[0]
        if self.kind == "classification":
            assert targets is not None
            each = F.cross_entropy(output.float(), targets, ignore_index=-100, reduction="none")
            if targets.dim() > 1:
                return (each.reshape(n, -1).sum(dim=1).double(),
                        (targets != -100).reshape(n, -1).sum(dim=1).double())
            return each.double(), torch.ones(n, dtype=torch.float64, device=output.device)
        ones = torch.ones(n, dtype=torch.float64, device=output.device)
        if self.kind == "regression":
            out, target = self._regression_pair(output, targets)
            return (out - target).pow(2).reshape(n, -1).mean(dim=1).double(), ones
        bits = self._bits_per_dim(output, logdet).double()
        return (bits + math.log2(self.levels) if self.levels else bits), ones

    @staticmethod
    def _regression_pair(output: torch.Tensor, targets: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The output in float32 and the targets in its dtype, viewed as its shape where only the shape
        differs (a regression's loss, whole or per sample)."""
        assert targets is not None
        out = output.float()
        target = targets.to(out.dtype)
        if target.shape != out.shape and target.numel() == out.numel():
            target = target.view_as(out)
        return out, target

    @staticmethod
    def _bits_per_dim(output: torch.Tensor, logdet: torch.Tensor | None) -> torch.Tensor:
        """A flow's negative log-likelihood of each sample under a standard normal base, in bits per
        dimension (before the dequantisation's levels)."""
        z = output.float().flatten(1)
        dims = z.shape[1]
        nll = 0.5 * z.pow(2).sum(dim=1) + 0.5 * dims * math.log(2 * math.pi)
        if logdet is not None:
            nll = nll - logdet.float().reshape(-1)
        return nll / (dims * LN2)
