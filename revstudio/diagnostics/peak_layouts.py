"""Which regions the runtime keeps in channels_last streams (``runtime.Region.layout_of``).

A region copies each input into a stream of its own. On the CPU a float32 region that
convolves and has no general invertible layer takes channels_last; any other region keeps its
input's layout, and that input may be channels_last because a region before it made it so (its
outputs come back in its streams' layout, and a Conv, an activation or a skip add after it
keeps that layout). So the layout is followed from one region to the next. Torch-free.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.graph import PortRef
from .peak_bare import cast_flow
from .peak_steps import _conv2d, _layers, _stream_steps_only

Value = tuple[str, str]

# layers outside regions whose image output keeps the layout of their first input (a Merge:
# TensorIterator lays out the result as its first operand when the operands differ)
_KEEPS = frozenset({"Conv", "Activation", "Norm", "Dropout", "Merge", "Pool"})


def channels_last(b: Any, region: Any, reads: Sequence[Value]) -> bool:
    """Whether the runtime keeps ``region``'s streams in channels_last (``reads``: the values
    it reads from outside), remembered on ``b`` (``UnitBuilder.region_layouts``) for the regions
    after it. Random skip network 91: a region with a Squeeze after the channels_last region
    before it got channels_last streams, so its 32x32x3x3 weight gradients came channels_last
    and autograd copied one at the peak (8 % under at batch 1 when taken for channels-first)."""
    found = _channels_last(b, region, reads)
    b.region_layouts[str(getattr(region, "id", ""))] = found
    return found


def _channels_last(b: Any, region: Any, reads: Sequence[Value]) -> bool:
    if b.device != "cpu" or b.elem != 4:
        return False
    infos = b.w.report.nodes
    images = [v for v in reads if v[0] in infos and len(infos[v[0]].outputs.get(v[1], ())) == 3]
    if not images:
        return False
    if _stream_steps_only(b, region) and any(_conv2d(info) for info, _ in _layers(b, region)):
        return True  # chosen automatically
    # the input's own layout, which reaches the convolutions unless a flow layer computes new
    # tensors first (an InvConv1x1's einsum comes channels-first: random skip network 0, an
    # ActNorm and InvConv1x1 first in a region after a channels_last one); a Squeeze keeps it
    return _no_flow(b, region) and any(_value_channels_last(b, v, 0) for v in images)


def apart_parts(b: Any, region: Any, named: Sequence[Value]) -> set[Value]:
    """The region outputs ``named`` that are parts of a Split of a region input the region copies
    into channels_last streams of its own (an input stored channels-first, read by that Split
    alone): the runtime owns that copy and slices it apart into dense copies of each part
    (``runtime_layout.Split``, ``runtime_streams.apart``), so such a part is a storage of its own,
    not a view of the caller's tensor (which its producer may keep besides: random skip network 95's
    ReLU, under whose output x2's copy was counted, 2.7 % under in reversible mode). Call once
    ``b.channels_last`` is the region's."""
    if not b.channels_last:
        return set()
    steps = set(getattr(region, "steps", ()) or ())
    free = set(getattr(region, "free", ()) or ())
    inputs = {(p.node, p.port) for p in map(PortRef.parse, getattr(region, "inputs", ())) if str(p) not in free}
    outputs = {(p.node, p.port) for p in map(PortRef.parse, getattr(region, "outputs", ()))}
    found: set[Value] = set()
    for v in named:
        info = b.w.report.nodes.get(v[0])
        src = b.w.source.get((v[0], "in"))
        if info is None or info.type != "Split" or v[0] not in steps or src is None:
            continue
        fed, shape = (src.node, src.port), list(info.inputs.get("in") or ())
        if fed not in inputs or fed in outputs or len(shape) != 3 or shape[1] * shape[2] == 1:
            continue
        if [r for r in b.readers.get(fed, ()) if r in steps] != [v[0]] or _value_channels_last(b, fed, 0):
            continue
        found.add(v)
    return found


def weight_copy(b: Any, nid: str) -> int:
    """Bytes of the copy autograd makes of ordinary Conv ``nid``'s weight gradient once its
    backward has returned (``Unit.work_after``): a 2-D convolution whose input is channels_last
    (a region's output in channels_last streams, or a layer after one that keeps its layout) makes
    its weight gradient channels_last too, and autograd copies it into the parameter's layout, as
    ``peak_steps.reordered_grads`` has it inside regions (1x1 kernels aside). A 3x3 Conv of 64
    channels after a wired block was 15-33 % under in reversible mode at batch 1 without it."""
    info, view = b.w.report.nodes.get(nid), b.w.views.get(nid)
    src = b.w.source.get((nid, "in"))
    if b.device != "cpu" or b.elem != 4 or info is None or view is None or src is None or nid in b.w.region_of:
        return 0
    if not _conv2d(info) or int(view.params.get("kernel_size", 1)) <= 1:
        return 0
    if not _value_channels_last(b, (src.node, src.port), 0):
        return 0
    bias = int(view.params.get("out_channels", 0)) if view.params.get("bias", True) else 0
    return (int(info.parameters) - bias) * b.elem


def _no_flow(b: Any, region: Any) -> bool:
    for sid in getattr(region, "steps", ()):
        view = b.w.views.get(sid)
        if view is None:
            continue
        if cast_flow(view.type):
            return False
        inner = b.spliced(sid) if view.type in ("Group", "Repeat") else None
        if inner is not None and not _no_flow(inner[0], inner[1]):
            return False
    return True


def _value_channels_last(b: Any, v: Value, depth: int) -> bool:
    """Whether image value ``v`` is stored channels_last when a region reads it."""
    rid = b.w.region_of.get(v[0])
    if rid is not None:
        return bool(b.region_layouts.get(rid, False))
    info = b.w.report.nodes.get(v[0])
    if info is None or info.type not in _KEEPS or not info.inputs or depth > 200:
        return False
    first = next(iter(info.inputs))
    src = b.w.source.get((v[0], first))
    if src is None or len(info.inputs[first]) != 3:
        return False
    return _value_channels_last(b, (src.node, src.port), depth + 1)
