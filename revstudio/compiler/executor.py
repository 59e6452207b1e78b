"""The executor a compiled model and each of its group bodies share: it builds the plan's node
modules from each spec's ``build`` (under the plan's module names, so ``state_dict`` keys derive
from node ids; a plugin's layer is checked and a failing build is blamed on its node) and runs
the plan's ops as a program over named values (``program``), dropping each value once no later
call reads it, and recomputing checkpoint mode's segments in backward. :class:`GroupModule` is
a group body built from its own plan; ``module.CompiledModel`` the whole graph.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from revstudio.core.spec import BuildContext, registry

from . import assembly as asm
from . import runtime as rt
from .builder import Builder
from .held import hold_inplace, hold_region
from .module_repr import short_repr
from .plan import CompileError, NodeOp, Plan, RegionOp
from .plugin_layers import build_failure_where, check_plugin_layer, plugin_of
from .program import NodeCall, Part, RegionCall
from .renames import alias_state_keys, layer_aliases


class Executor(nn.Module):
    """Shared by the model and group bodies: builds node modules and runs the plan's ops."""

    def __repr__(self) -> str:
        return short_repr(self)  # hundreds of layers: the first and last ones and how many between

    def _setup(self, plan: Plan, root: Builder) -> None:
        self._plan = plan
        self._root = root
        self._aliases: dict[str, str] = {}  # renamed nodes: old layer name -> new (load_state_dict)
        for node_op in plan.node_ops():
            self._build_node(node_op)
        shared = asm.shared_values(plan)
        self._program: list[Callable[[dict[str, torch.Tensor]], None]] = []
        self._regions: list[rt.Region] = []
        for op in plan.ops:
            if isinstance(op, NodeOp):
                module = getattr(self, op.module)
                self._program.append(NodeCall(module, op, asm.copies_inputs(module, op.inputs, shared)))
                hold_inplace(self, op.module, op.type, module)  # (copies_inputs read its inplace)
            elif isinstance(op, RegionOp):
                given = asm.caller_values(plan) if plan is root.plan else ()
                data = asm.region_data(op, plan.groups, given)
                region = asm.build_region(self, data)
                hold_region(self, data)  # the modules it takes apart refuse replacement, warn of hooks
                self._regions.append(region)
                self._program.append(RegionCall(self, op, region))
        # what adds to the log-determinant: flow layers and regions holding flow steps, in order
        regions = iter(self._regions)
        self._flow_parts: list[Any] = []
        for op in plan.ops:
            if isinstance(op, NodeOp):
                part: Any = getattr(self, op.module)
            elif isinstance(op, RegionOp):
                part = next(regions)
            else:
                continue
            if asm.is_flow(part):
                self._flow_parts.append(part)
        # runs of ordinary layers that "checkpoint" mode recomputes in backward
        ops = asm.executed_ops(plan)
        results = [op.input for op in plan.outputs]
        # per program call: the values no later call reads, dropped once it has run
        self._released = asm.released_after([(op.inputs, op.outputs) for op in ops], results)
        for call, gone in zip(self._program, self._released):
            if isinstance(call, RegionCall):
                call.released = frozenset(gone)
        self._segments = {start: (end, Part(self._program[start:end], seg_in, seg_out),
                                  [getattr(self, op.module) for op in ops[start:end]])
                          for start, end, seg_in, seg_out in asm.plan_segments(plan)}

    @property
    def flow(self) -> bool:
        """Whether this graph has flow layers (a log-determinant)."""
        return bool(self._flow_parts)

    @property
    def logdet(self) -> torch.Tensor | None:
        """log|det J| of the last forward, per sample: the sum over the flow layers
        (AffineCoupling, ActNorm, InvConv1x1; additive couplings add 0), differentiable
        in every mode, so a flow's likelihood trains in reversible mode too. None
        without flow layers."""
        return asm.total_logdet(self._flow_parts)

    def __setattr__(self, name: str, value: Any) -> None:
        self._refuse_layer_swap(name, value)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        self._refuse_layer_swap(name, None)
        super().__delattr__(name)

    def _refuse_layer_swap(self, name: str, value: Any) -> None:
        """A node's layer is part of the compiled program (its calls and regions hold the layer itself):
        another module put in its place would be left out of forward while its parameters were trained,
        so ``model.head = nn.Linear(...)`` is refused saying what to do instead. (torch's DataParallel
        sets a replica's layers, ``_is_replica``, which ``rt.refuse_replicas`` answers for.)"""
        plan = self.__dict__.get("_plan")
        modules = self.__dict__.get("_modules")
        if plan is None or modules is None or name not in modules or modules[name] is value \
                or self.__dict__.get("_is_replica", False):
            return
        node = next((nid for nid, attr in plan.modules.items() if attr == name), None)
        if node is None:
            return
        where = "the model" if self.__dict__.get("_root") is None or plan is self._root.plan \
            else f"group {plan.name!r}"
        raise AttributeError(
            f"cannot replace {name!r}: it is the layer of node {node!r} in {where}, which the compiled model "
            "runs as it was built; another module set in its place would be left out of forward while its "
            "weights trained (set its weights, or freeze them with requires_grad_(False), instead). Change "
            "the node in the graph and compile again (rs.compile; model.state_dict() loads by node id, "
            "strict=False for the changed node), or wrap the model: nn.Sequential(model, new_layer)")

    def _replicate_for_data_parallel(self) -> Any:  # nn.DataParallel's copy: see rt.refuse_replicas
        # (the model's and a group body's alike: a body replicated on its own holds regions too)
        held = any(m._regions for m in self.modules() if isinstance(m, Executor))
        return rt.refuse_replicas(self) if held else super()._replicate_for_data_parallel()

    def _invert(self, ys: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        output_at, input_at = asm.inverse_positions(self._plan)
        return asm.invert_region(self._regions[0], ys, output_at, input_at, self._root.dtype)

    # ---- building ----------------------------------------------------------
    def _build_node(self, op: NodeOp) -> None:
        spec = registry.get(op.type)
        plugin = plugin_of(op.type)
        blame = f"; a bug in the plugin {plugin.label}: update the plugin or tell its authors" if plugin else ""
        if spec.build is None:
            raise CompileError(f"{op.node}: node type {op.type} cannot be compiled (it has no build){blame}")
        root = self._root

        def build_group(name: str) -> nn.Module:
            keys = [k for p, k in op.bodies.items() if op.params.get(p) == name]
            if not keys:
                raise CompileError(f"{op.node}: asked for group {name!r}, which none of its parameters names")
            return GroupModule(root.plan.groups[keys[0]], root)

        ctx = BuildContext(op.node, dict(op.params), list(op.in_shapes), list(op.out_shapes),
                           root.graph.groups if root.graph is not None else {}, build_group)
        try:
            module = spec.build(ctx)
        except CompileError:
            raise
        except Exception as exc:  # a catalog build failing is reported against its node
            raise CompileError(f"{op.node} ({op.type}): could not build the layer: {exc}"
                               f"{build_failure_where(exc, ctx, plugin)}{blame}") from exc
        if plugin is not None:
            check_plugin_layer(op, spec, module, plugin, ctx.groups)
        self.add_module(op.module, module.to(device=root.device, dtype=root.dtype))

    # ---- running -------------------------------------------------------------
    def _run(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        plan = self._plan
        env: dict[str, torch.Tensor] = {}
        for op in plan.inputs:
            env[op.output] = inputs[op.index]
        if self._root.mode == "checkpoint" and self._segments and torch.is_grad_enabled():
            self._run_checkpointed(env)
        else:
            for call, gone in zip(self._program, self._released):
                call(env)
                for v in gone:
                    env.pop(v, None)
        return [env[op.input] for op in sorted(plan.outputs, key=lambda o: o.index)]

    def _run_checkpointed(self, env: dict[str, torch.Tensor]) -> None:
        i = 0
        while i < len(self._program):
            seg = self._segments.get(i)
            if seg is None:
                self._program[i](env)
                end = i + 1
            else:
                end, part, modules = seg
                outs = asm.recompute_in_backward(part, [env[v] for v in part.inputs], modules)
                env.update(zip(part.outputs, outs))
            for gone in self._released[i:end]:
                for v in gone:
                    env.pop(v, None)  # (a segment's insides never reach ``env``)
            i = end


class GroupModule(Executor):
    """A group body built from its plan: ``forward(*xs) -> tuple``; ``inverse`` if the body is invertible."""

    def __init__(self, plan: Plan, root: Builder) -> None:
        super().__init__()
        self._setup(plan, root)
        body = root.graph.groups.get(plan.name) if root.graph is not None else None
        if body is not None:  # nodes renamed inside the body: their old keys load here
            self._aliases = layer_aliases(body)

    def _load_from_state_dict(self, state_dict: Any, prefix: str, *args: Any, **kwargs: Any) -> None:
        alias_state_keys(state_dict, prefix, self._aliases)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(self._run(xs))

    @property
    def logdet(self) -> torch.Tensor | None:
        """log|det J| of the body's flow layers in the last forward that ran them, per sample: the
        model's program runs a body inside its reversible region layer by layer, never this forward."""
        layers = [getattr(self, op.module) for op in self._plan.node_ops()]
        return asm.body_logdet(self._flow_parts, [layer for layer in layers if asm.is_flow(layer)])

    def inverse(self, *ys: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if not self._plan.invertible:
            raise NotImplementedError(f"group {self._plan.name!r} is not invertible")
        return self._invert(ys)
