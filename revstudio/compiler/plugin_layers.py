"""Holding a plugin's layers to the contract of docs/plugins.md while a model is built.

A built-in layer is tested by revstudio's own suite; a plugin's is not. So for a node
type a plugin declares, the compiler checks what it can see: that ``count_params``
agrees with the weights ``build`` created (the check, the estimate and the memory
figures rely on it: a mismatch is reported once, naming the plugin), and that
``forward`` returns a tuple with one tensor per output port, each of the shape ``infer``
declared, on the input's device and (floating, outside autocast) of its dtype (a bare
tensor would be iterated along its batch axis, silently wrong; a wrong shape, dtype or
device would fail in the next layer, far from its cause, as an internal error; each raises
``PluginError`` naming the node).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from revstudio.core.plugins import PluginError, Provider, raised_in, report
from revstudio.core.spec import BuildContext, InferContext, NodeSpec, registry

from .plan import NodeOp


def plugin_of(type_id: str) -> Provider | None:
    """The plugin that declares ``type_id``; None for the built-in catalog (or a spec registered by hand)."""
    provider = registry.provider(type_id)
    return None if provider is None or provider.builtin else provider


def build_failure_where(exc: Exception, ctx: BuildContext, plugin: Provider | None) -> str:
    """Where a plugin's ``build`` raised (``", in pkg.nodes, line 6"``), and, when it asked its
    context for something it does not have (``ctx.input("in")``, which is ``infer``'s), what it
    does have; empty for the built-in catalog."""
    if plugin is None:
        return ""
    where = raised_in(exc, plugin)
    if isinstance(exc, AttributeError) and getattr(exc, "obj", None) is ctx:
        where += ("; build's ctx has params, in_shapes and out_shapes (shapes without the batch axis, "
                  "in port order: ctx.in_shapes[0] for the first input), node_id, groups and build_group")
    return where


def _shape_text(shape: Any) -> str:
    return "x".join(map(str, shape)) or "a scalar"


class OutputContract:
    """A forward hook: the module must return a tuple with one tensor per output port, each of
    its inferred shape after the batch axis (picklable, unlike a closure)."""

    def __init__(self, node: str, type_id: str, plugin: str, count: int,
                 ports: tuple[str, ...] = (), shapes: tuple[tuple[int, ...], ...] = (),
                 method: str = "forward", side: str = "output") -> None:
        self.node, self.type_id, self.plugin, self.count = node, type_id, plugin, count
        self.ports, self.shapes = ports, shapes
        self.method, self.side = method, side  # the inverse returns the inputs

    def __call__(self, module: nn.Module, args: Any, output: Any) -> None:
        blame = f"a bug in the plugin {self.plugin}: update the plugin or tell its authors"
        what = f"node {self.node} ({self.type_id}): the {self.method} of {type(module).__name__}"
        if not (isinstance(output, tuple) and len(output) == self.count):
            got = (f"a tuple of {len(output)}" if isinstance(output, tuple) else f"a {type(output).__name__}")
            raise PluginError(
                f"{what} returned {got}, but revstudio needs a tuple of {self.count} tensor(s), one per "
                f"{self.side} port (e.g. `return (y,)`); {blame}")
        for port, shape, value in zip(self.ports, self.shapes, output):
            if not isinstance(value, torch.Tensor):
                raise PluginError(f"{what} returned a {type(value).__name__} for {self.side} {port!r}, not a "
                                  f"tensor; {blame}")
            wrong = _dtype_or_device(args, value)
            if wrong:
                raise PluginError(f"{what} returned {self.side} {port!r} as {wrong}; {blame}")
            if tuple(value.shape[1:]) != tuple(shape):
                raise PluginError(
                    f"{what} returned {_shape_text(value.shape[1:])} (after the batch axis) for {self.side} "
                    f"{port!r}, but the type's infer says {_shape_text(shape)}; the layers after it were built "
                    f"for that shape. Make infer and the layer agree; {blame}")


class InverseContract:
    """Stands in for a plugin layer's ``inverse`` (an instance attribute, so exported code, which
    builds the class anew, never sees it): its result is held to ``OutputContract`` for the
    input ports, since the runtime would otherwise iterate a bare tensor along its batch axis."""

    def __init__(self, module: nn.Module, contract: OutputContract) -> None:
        self.inverse: Any = getattr(module, "inverse")  # noqa: B009 - nn.Module types attributes as tensors
        self.module, self.contract = module, contract

    def __call__(self, *ys: Any) -> Any:
        xs = self.inverse(*ys)
        self.contract(self.module, ys, xs)
        return xs


def _dtype_or_device(args: Any, value: torch.Tensor) -> str | None:
    """How an output leaves the dtype or the device of the layer's first tensor input, said with
    the fix; None where it keeps them. Only a floating input fixes the dtype (an embedding turns
    integer ids into floats), and autocast may lower it (a convolution under bf16 autocast)."""
    first = next((a for a in args if isinstance(a, torch.Tensor)), None)
    if first is None:
        return None
    if value.device != first.device:
        return (f"a tensor on {value.device} from an input on {first.device}: revstudio runs the model on "
                "one device; make new tensors on the input's (`x.new_zeros(...)`, `device=x.device`)")
    if not first.is_floating_point() or value.dtype == first.dtype:
        return None
    if value.is_floating_point() and torch.is_autocast_enabled(first.device.type):
        return None
    return (f"{str(value.dtype).removeprefix('torch.')} from a {str(first.dtype).removeprefix('torch.')} input: "
            "the layers after it hold weights of the model's dtype; return the input's dtype "
            "(`y.to(x.dtype)`)")


def check_plugin_layer(op: NodeOp, spec: NodeSpec, module: Any, plugin: Provider,
                       groups: Mapping[str, Any] | None = None) -> None:
    """Check a freshly built plugin layer against its spec (see the module docstring)."""
    if not isinstance(module, nn.Module):
        raise PluginError(f"node {op.node} ({op.type}): build returned a {type(module).__name__}, not an "
                          f"nn.Module; a bug in the plugin {plugin.label}: update the plugin or tell its authors")
    module.register_forward_hook(OutputContract(op.node, op.type, plugin.label, len(op.outputs),
                                                spec.output_ports(op.params, groups), tuple(op.out_shapes)))
    if spec.invertible:
        if not callable(getattr(module, "inverse", None)):
            raise PluginError(
                f"node {op.node} ({op.type}): the type is declared invertible, but {type(module).__name__} has "
                "no method inverse(*outputs) returning the inputs as a tuple; add one or declare "
                f"invertible=False; a bug in the plugin {plugin.label}: update the plugin or tell its authors")
        inputs = spec.input_ports(op.params, groups)
        setattr(module, "inverse", InverseContract(module, OutputContract(  # noqa: B010 - as above
            op.node, op.type, plugin.label, len(inputs), inputs, tuple(op.in_shapes), "inverse", "input")))
    if spec.count_params is None:  # the check counted 0 weights for it: say so if it has some
        built = sum(p.numel() for p in module.parameters())
        if built:
            report(plugin.label, f"node type {op.type!r} declares no count_params but build made {built} weights "
                                 f"(node {op.node}); the check's parameter count and the memory estimate count 0 "
                                 "until the plugin declares count_params")
        return
    ports = spec.input_ports(op.params)
    ctx = InferContext(op.node, op.params, dict(zip(ports, op.in_shapes)))
    try:
        declared = int(spec.count_params(ctx))
    except Exception:  # noqa: BLE001 - the shape pass already reported it against the node
        return
    built = sum(p.numel() for p in module.parameters())
    if declared != built:
        report(plugin.label, f"node type {op.type!r}: count_params says {declared} weights but build made "
                             f"{built} (node {op.node}); the parameter count and the memory estimate are off "
                             "until the plugin's count_params is fixed")
