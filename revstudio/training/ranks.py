"""What the ranks of a DDP run compare at its end, besides the gradients DDP itself averages.

Rank 0 alone reports and writes; this check tells it whether every rank ended
with its weights, which a desynchronised run (a rank that drew other data or
skipped a step) would not.
"""
from __future__ import annotations

from typing import Any

import torch


def ranks_in_sync(model: Any, device: torch.device) -> bool:
    """Whether every rank ends with rank 0's weights, bit for bit (DDP keeps them so; a difference
    means a desynchronised run). One tensor at a time: no copy of the whole model.

    Buffers are not compared but made rank 0's: DDP broadcasts them from rank 0 before each
    forward, so BatchNorm's running statistics, updated by each rank's own last forward, differ
    by design at the end; every rank then holds the model rank 0 saved."""
    import torch.distributed as tdist

    same = torch.ones(1, device=device)
    for value in model.parameters():
        ref = value.detach().clone()
        tdist.broadcast(ref, src=0)
        if not torch.equal(ref, value):
            same.zero_()
    for buffer in model.buffers():
        tdist.broadcast(buffer.data, src=0)
    tdist.all_reduce(same, op=tdist.ReduceOp.MIN)
    return bool(same.item() == 1)


def scored_share(counted: int, world: int, device: torch.device) -> float:
    """What a rank's mean loss over its own ``counted`` scored steps (labels per step) is multiplied by
    so that DDP's plain average of the ranks' gradients is the gradient of the mean over every scored step
    of the global batch, as one process takes it: the ranks score different numbers of steps."""
    if world <= 1:
        return 1.0
    import torch.distributed as tdist

    total = torch.tensor([float(counted)], dtype=torch.float64, device=device)
    tdist.all_reduce(total)
    return counted * world / max(float(total), 1.0)
