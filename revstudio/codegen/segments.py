"""Runs of ordinary layers in exported code, which "checkpoint" mode recomputes in backward.

Which runs form a segment is decided by ``assembly.plan_segments``, the call the
compiler makes. The export writes one method per segment and calls it through
``_run_part``: in "checkpoint" mode that goes through the inlined
``assembly.recompute_in_backward`` (the compiler's own checkpoint call), in the
other modes the method simply runs. The method takes a list of its inputs and
empties it, so an input forward no longer holds is freed after its last reader
in there, as the compiled module frees it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from revstudio.compiler.assembly import plan_segments


@dataclass
class Segment:
    """Ops ``start:end`` of the executed ops, their inputs and the outputs read later."""

    start: int
    end: int
    inputs: list[str]
    outputs: list[str]


def segments(plan: Any) -> dict[int, Segment]:
    """The plan's checkpoint segments by start index."""
    return {start: Segment(start, end, ins, outs) for start, end, ins, outs in plan_segments(plan)}


RUN_PART = '''
    def _run_part(self, part: Callable[[list[torch.Tensor]], tuple[torch.Tensor, ...]], layers: list[nn.Module],
                  inputs: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """Ordinary layers; in "checkpoint" mode they are recomputed in backward instead of stored.
        ``part`` takes ``inputs`` over (it empties the list): each goes after its last reader."""
        if self._mode == "checkpoint" and torch.is_grad_enabled():
            return {recompute}(lambda *xs: part(list(xs)), inputs, layers)
        return part(inputs)
'''
