"""Runs of ordinary layers, which "checkpoint" mode recomputes in backward.

The compiler groups two or more consecutive ordinary ops (outside reversible
regions) into a segment and, in "checkpoint" mode, runs each segment through
``torch.utils.checkpoint``. The export does the same with one method per
segment, called through ``_run_part``; in the other modes the method simply runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Segment:
    """Ops ``start:end`` of the executable ops, their inputs and the outputs read later."""

    start: int
    end: int
    inputs: list[str]
    outputs: list[str]


def executable_ops(plan: Any) -> list[Any]:
    return [op for op in plan.ops if op.kind in ("node", "region")]


def segments(plan: Any) -> dict[int, Segment]:
    """Segments by start index, found exactly as ``compiler.module._Executor._checkpoint_segments``."""
    ops = executable_ops(plan)
    later: list[set[str]] = [set() for _ in ops]
    after: set[str] = {op.input for op in plan.outputs}
    for i in range(len(ops) - 1, -1, -1):
        later[i] = set(after)
        after |= set(ops[i].inputs)
    found: dict[int, Segment] = {}
    i = 0
    while i < len(ops):
        j = i
        while j < len(ops) and ops[j].kind == "node":
            j += 1
        if j - i >= 2:
            made: set[str] = set()
            seg_in: list[str] = []
            for op in ops[i:j]:
                seg_in += [v for v in op.inputs if v not in made and v not in seg_in]
                made |= set(op.outputs)
            seg_out = [v for op in ops[i:j] for v in op.outputs if v in later[j - 1]]
            found[i] = Segment(i, j, seg_in, seg_out)
        i = max(j, i + 1)
    return found


RUN_PART = '''
    def _run_part(self, part: Callable[..., tuple[torch.Tensor, ...]], *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Ordinary layers; in "checkpoint" mode they are recomputed in backward instead of stored."""
        if self._mode == "checkpoint" and torch.is_grad_enabled():
            return checkpoint(part, *xs, use_reentrant=False, context_fn=self._recompute_context)
        return part(*xs)

    def _recompute_context(self) -> tuple[contextlib.AbstractContextManager[None], contextlib.AbstractContextManager[None]]:
        # the recomputation must leave BatchNorm running statistics as the forward left them
        return contextlib.nullcontext(), {restored}([self])
'''
