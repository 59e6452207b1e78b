"""What to tell a user whose run ran out of memory: a mode that keeps less, or a batch that fits.

The batch comes from the memory estimate (``max_batch_that_fits``, CONTRACTS
section 5) against what the device has: CUDA's total memory, or the
``MemAvailable`` of /proc/meminfo on the CPU. Until that function exists the
existing estimate's totals, which grow linearly with the batch, stand in.
"""
from __future__ import annotations

from typing import Any

from revstudio.diagnostics.estimate import precision_note

from .config import TrainConfig


def _budget(device_type: str) -> int | None:
    if device_type == "cuda":
        import torch

        try:
            free, total = torch.cuda.mem_get_info()
            return int(total * 0.9)
        except Exception:
            return None
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def fitting_batch(graph: Any, report: Any, budget: int, mode: str, optimizer: str | None = None,
                  device: str = "cpu") -> int | None:
    """The largest batch whose estimated step fits ``budget`` bytes on ``device`` ("cpu" or
    "cuda"), or None if not even 1 does."""
    from revstudio.diagnostics.estimate import max_batch_that_fits

    return max_batch_that_fits(graph, report, budget, mode=mode, optimizer=optimizer, device=device)


def oom_message(graph: Any, report: Any, cfg: TrainConfig, batch: int, model: Any) -> str:
    """One line: where memory ran out, and what would fit by the estimate."""
    device_type = "cpu"
    try:
        device_type = next(model.parameters()).device.type
    except (StopIteration, AttributeError):
        pass
    budget = _budget(device_type)

    def fits(mode: str) -> int | None:
        if budget is None or precision_note(cfg.precision):  # (the estimate models fp32 steps only)
            return None
        try:
            return fitting_batch(graph, report, budget, mode, optimizer=cfg.optimizer,
                                 device="cuda" if device_type == "cuda" else "cpu")
        except Exception:  # advice is best effort; the message stands without the number
            return None

    hints = []
    if cfg.mode != "reversible" and getattr(report, "regions", None):
        rev = fits("reversible")
        more = f", where the estimate fits batch {rev}" if rev else ""
        hints.append(f"--mode reversible (it rebuilds the regions' activations instead of keeping them{more})")
    now = fits(cfg.mode)
    if now is not None and now < batch:
        hints.append(f"--batch-size {max(1, now)} (the largest batch the memory estimate fits in {cfg.mode} mode)")
    elif not hints:
        hints.append(f"a smaller --batch-size than {batch}")
    return f"out of memory on {device_type} at batch {batch} in {cfg.mode} mode; try " + " or ".join(hints)
