"""The compiled program's steps: small callables over a dict of named values.

Every plan op becomes one: :class:`NodeCall` runs a layer, :class:`RegionCall`
a reversible region (in the model's mode; under a memory budget its first steps
as in standard mode and the rest reversibly), :class:`Part` a run of calls that
checkpoint mode recomputes in backward. They are objects rather than closures,
so copy.deepcopy of a model (EMA, SWA) copies the modules they hold along.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from . import assembly as asm
from . import budget
from . import runtime as rt
from .plan import NodeOp, RegionOp

if TYPE_CHECKING:
    from .builder import Builder
    from .executor import Executor


class NodeCall:
    def __init__(self, module: nn.Module, op: NodeOp, clone: bool) -> None:
        self.module, self.op, self.clone = module, op, clone

    def __call__(self, env: dict[str, torch.Tensor]) -> None:
        xs = [env[v] for v in self.op.inputs]
        if self.clone:  # an in-place layer must not overwrite a value someone else still reads
            xs = [x.clone() for x in xs]
        for name, y in zip(self.op.outputs, self.module(*xs)):
            env[name] = y


class RegionCall:
    def __init__(self, owner: Executor, op: RegionOp, region: rt.Region) -> None:
        self.owner, self.op, self.region = owner, op, region
        # memory budget: (head data, kept head, tail data, reversible tail) per number of kept first steps
        self._parts: dict[int, tuple[Any, rt.Region | None, Any, rt.Region | None]] = {}
        # the values nothing after this call reads (set by the executor, which drops them after it)
        self.released: frozenset[str] = frozenset()

    def __call__(self, env: dict[str, torch.Tensor]) -> None:
        root = self.owner._root
        kept = 0
        if root.mode == "reversible" and root.memory_budget is not None and self.owner._plan is root.plan:
            first = env[self.op.inputs[0]] if self.op.inputs else None
            batch = first.shape[0] if first is not None and first.dim() else 1
            kept = root.kept_steps(batch).get(self.region.id, 0)
            del first
        self.region.track_error = root.track_inversion
        if kept:
            self._run_kept(env, root, kept)
            return
        mode = root.mode if self.owner._plan is root.plan else asm.nested_mode(self.region, root.mode)
        outs = self.region([env[v] for v in self.op.inputs], mode, root.dtype, root.stream_for(root.dtype))
        for name, y in zip(self.op.outputs, outs):
            env[name] = y

    def _run_kept(self, env: dict[str, torch.Tensor], root: Builder, kept: int) -> None:
        """The region with its first ``kept`` steps as in standard mode (autograd keeps their
        activations: no rebuild in backward) and the steps after them reversible."""
        if kept not in self._parts:
            data = asm.region_data(self.op, root.plan.groups, asm.caller_values(root.plan))
            head, tail = budget.split_region_data(data, kept)
            rest = None if tail is None else asm.build_region(self.owner, tail)
            if rest is not None:
                rest.error_owner = self.region  # (its inversion error is the whole region's)
            self._parts[kept] = (head, None if head is None else asm.build_region(self.owner, head), tail, rest)
        head, kept_part, tail, rebuilt = self._parts[kept]
        local = dict(env)
        logdets = []
        if root.track_inversion:  # (untracked, the last measured figures stay)
            self.region.last_error = None  # (the rest sets it: nothing of a region kept whole)
        if kept_part is not None:
            # the head runs as standard mode runs it, regions nested in its bodies included (a
            # Reshape ending a coupling's F is one): run reversibly, they kept their streams'
            # pairs and error samples beside the head's activations, over the budget's price
            # (random sequence model 4 at batch 8 kept 13,312 B under a budget of 7,168 B)
            mode, root.mode = root.mode, "standard"
            try:
                outs = kept_part([local[v] for v in head["inputs"]], "standard", root.dtype)
            finally:
                root.mode = mode
            local.update(zip(head["outputs"], outs))
            del outs  # (``local`` alone holds them: see below)
            logdets.append(kept_part.logdet)
        if rebuilt is not None:
            # the region's inputs only the head reads, and nothing after the region, go now, not
            # once the rest has run forward (the head's graph holds what its backward needs)
            for v in head["inputs"] if head is not None else ():
                if v in self.released and v not in tail["inputs"] and v not in self.op.outputs:
                    env.pop(v, None)
                    local.pop(v, None)
            # the rest's inputs held by ``local`` alone, as a call holds them by one name: the
            # rest frees only inputs nobody else holds (``runtime._held_elsewhere``)
            for v in tail["inputs"]:
                if v in self.released and v not in self.op.outputs:
                    env.pop(v, None)
            rebuilt.memory_format = self.region.memory_format
            rebuilt.track_error = root.track_inversion
            outs = rebuilt([local[v] for v in tail["inputs"]], "reversible", root.dtype, root.stream_for(root.dtype))
            local.update(zip(tail["outputs"], outs))
            logdets.append(rebuilt.logdet)
        if self.region.flow:
            found = [d for d in logdets if d is not None]
            self.region.logdet = sum(found[1:], found[0]) if found else None
        for name in self.op.outputs:
            env[name] = local[name]


class Part:
    """A checkpoint segment: its program calls run on their own values, returning what is read later."""

    def __init__(self, calls: list[Callable[[dict[str, torch.Tensor]], None]], inputs: list[str],
                 outputs: list[str]) -> None:
        self.calls, self.inputs, self.outputs = calls, inputs, outputs
        # per call: the values no later call of the segment reads (``assembly.released_after``)
        self.released = asm.released_after([(c.op.inputs, c.op.outputs) for c in calls], outputs)  # type: ignore[attr-defined]

    def __call__(self, *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        local = dict(zip(self.inputs, xs))
        for call, gone in zip(self.calls, self.released):
            call(local)
            for v in gone:
                local.pop(v, None)  # (a segment's inputs the caller holds as well)
        return tuple(local[v] for v in self.outputs)
