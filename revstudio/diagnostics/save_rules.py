"""What autograd keeps for backward, per node type, computed from shapes alone.

Each rule says which of a node's values (input ports, output ports) its
backward needs and how many extra bytes of internal tensors (masks, pooling
indices, RNN gates) it keeps. The estimate counts each kept tensor once, so
two readers saving the same value do not double it. Most types say it in their
declaration (``NodeSpec.saved_for_backward``, read by ``_declared``); ``RULES``
holds the measured rules of the built-in layers whose kernels keep what no
declaration by shapes can say (by device, dtype floor or group body).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from math import prod
from typing import Any

from ..core.plugins import spec_bug, spec_failed
from ..core.spec import SavedTensors, registry
from .rnn_memory import (
    loop_cell,
    loop_forward_work,
    loop_kept_elements,
    loop_stop_bytes,
    lstm_forward_work,
    lstm_kept_bytes,
    rnn_dims,
)

ShapeT = tuple[int, ...]


@dataclass(slots=True)
class Saves:
    """What one node keeps for backward (standard mode)."""

    inputs: tuple[str, ...] = ()     # input ports whose tensors are kept
    outputs: tuple[str, ...] = ()    # output ports whose tensors are kept
    extra_bytes: int = 0             # internal tensors only this node holds
    approximate: bool = False        # the rule is a model, not an exact count
    # Of a kept input, the bytes actually read (a coupling's F reads only x2, a
    # view): when the input arrives as separate halves, only this part is kept.
    input_part_bytes: int = 0
    # what its forward holds beside its outputs, and its backward beside the gradients, as its
    # type declares them (``SavedTensors``; the measured rules price theirs in ``peak_units``)
    forward_work_bytes: int = 0
    work_bytes: int = 0
    # of ``outputs``, those kept only while something reads them (``SavedTensors.freed_unread``)
    freed_unread: tuple[str, ...] = ()
    # of ``extra_bytes``, a copy of its input its forward makes and keeps (a Linear flattening a
    # view in another axis order: ``axis_order``), there from its forward's end on
    copied_bytes: int = 0
    # ``extra_bytes`` where a reversible region reruns it on what its inverse rebuilt, as its type
    # declares it (``SavedTensors.rerun_values``); None: the same
    rerun_extra_bytes: int | None = None
    # whether its inverse hands back dense buffers (``SavedTensors.inverse_dense``)
    inverse_dense: bool = True


@dataclass(slots=True)
class NodeView:
    """The facts a rule sees: params and shapes (batch excluded), element size."""

    type: str
    params: Mapping[str, Any]
    inputs: Mapping[str, ShapeT | None]
    outputs: Mapping[str, ShapeT]
    batch: int
    element_bytes: int
    # Body summaries of the groups this node runs (coupling f/g, Group, Repeat).
    bodies: Mapping[str, BodySaves] = field(default_factory=dict)
    device: str = "cpu"  # the device type the step runs on: some layers keep other tensors there
    dtype: str = ""  # the element type, where its size does not tell (float16 or bfloat16)

    def numel(self, shape: ShapeT | None) -> int:
        return 0 if shape is None else self.batch * prod(shape)

    def in_bytes(self, port: str = "in") -> int:
        return self.numel(self.inputs.get(port)) * self.element_bytes

    def out_bytes(self, port: str = "out") -> int:
        return self.numel(self.outputs.get(port)) * self.element_bytes

    def first_in(self) -> str:
        return next(iter(self.inputs), "in")


@dataclass
class BodySaves:
    """A group body as one step: which of its group inputs/outputs it keeps, and
    the bytes of everything it keeps inside."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    internal_bytes: int
    input_bytes: Mapping[str, int] = field(default_factory=dict)
    output_bytes: Mapping[str, int] = field(default_factory=dict)
    input_part_bytes: int = 0  # see Saves.input_part_bytes (a body that is one coupling)
    # A body whose input port only a Split reads: (port, the Split's part shapes, which parts the
    # body keeps); whose output port a Concat alone feeds: (port, the Concat's part shapes, which
    # parts the body keeps anyway). Inside a region the runtime fuses such a Concat with the next
    # body's Split (``runtime_layout.fuse_cat_slice``): the parts are handed on, never joined.
    head_split: tuple[str, tuple[tuple[int, ...], ...], tuple[bool, ...]] | None = None
    tail_cat: tuple[str, tuple[tuple[int, ...], ...], tuple[bool, ...]] | None = None


Rule = Callable[[NodeView], Saves]

# Value-producing types whose outputs are views of their input: keeping the
# output keeps the input's storage alive, not a new tensor.
VIEW_TYPES = frozenset({"Split", "Flatten", "Reshape", "GroupInput", "GroupOutput"})


def makes_view(kind: str | None, params: Mapping[str, Any]) -> bool:
    """Whether a node's outputs are views of its input: a ``VIEW_TYPES`` node's, and a Permute of
    kind axes (its channel kinds copy)."""
    return kind in VIEW_TYPES or (kind == "Permute" and params.get("kind") == "axes")


def _norm(v: NodeView) -> Saves:
    shape = v.inputs.get("in") or ()
    channels = shape[0] if shape else 1
    kind = str(v.params.get("kind", "batch"))
    stats = {
        "batch": channels,
        "layer": v.batch,
        "group": v.batch * int(v.params.get("groups", 1) or 1),
        "instance": v.batch * channels,
    }.get(kind, channels)
    # mean and inverse std are kept in float32 at least; instance norm runs as a batch norm of
    # batch x channels features, its weight repeated per sample and kept (measured, torch 2.13)
    kept = 3 if kind == "instance" and v.params.get("affine", True) else 2
    return Saves(inputs=("in",), extra_bytes=kept * stats * max(4, v.element_bytes))


# device types where torch's dropout is one fused kernel keeping a bool mask; elsewhere (the CPU)
# it multiplies by a mask of the input's dtype, which it keeps (measured, torch 2.13)
FUSED_DROPOUT = frozenset({"cuda", "xpu"})


def _dropout(v: NodeView) -> Saves:
    return Saves(extra_bytes=dropout_mask_bytes(v))


def dropout_mask_bytes(v: NodeView) -> int:
    """The mask a Dropout node draws in forward (beside its input and output), which it keeps
    where autograd records it."""
    if v.type != "Dropout" or float(v.params.get("p", 0.5)) <= 0.0:
        return 0
    per = 1 if v.device in FUSED_DROPOUT else v.element_bytes
    return v.numel(v.outputs.get("out")) * per


# Kept by torch 2.13's CPU kernels for both directions of one layer, in elements, as
# b*l*h, b*l*i, b*l, b*h, b*i, b (batch, length, input size, hidden size): fits of
# live-tensor measurements over b 1..32, l 4..32, i 8..64, h 8..32; and what their
# backward allocates at once on top. A float32 LSTM is counted exactly instead
# (``rnn_memory``, oneDNN's workspace layout); its row here serves other dtypes.
RNN_KEPT = {"lstm": (24.3, 10.3, 110.0, 20.0, 8.75, 233.0), "gru": (16, 2, 0, 2, 0, 0),
            "rnn_tanh": (4, 2, 0, 4, 0, 0), "rnn_relu": (4, 2, 0, 4, 0, 0)}
RNN_BACKWARD = {"lstm": (0, 1, 0, 13.8, 2.8, 0), "gru": (5, 0, 0, 1, 0, 0),
                "rnn_tanh": (3, 0, 0, 0, 0, 0), "rnn_relu": (3, 0, 0, 0, 0, 0)}


def rnn_elements(table: Mapping[str, tuple[float, ...]], v: NodeView) -> int:
    """Elements of a BiRNN's kept (``RNN_KEPT``) or backward (``RNN_BACKWARD``) tensors."""
    length, features, hidden, layers = rnn_dims(v)
    coef = table.get(str(v.params.get("cell", "lstm")), table["lstm"])
    total = 0.0
    b = v.batch
    for layer in range(layers):
        i = features if layer == 0 else 2 * hidden  # upper layers read both directions
        terms = (b * length * hidden, b * length * i, b * length, b * hidden, b * i, b)
        total += sum(c * t for c, t in zip(coef, terms))
    return max(0, int(total))


def counted_lstm(v: NodeView) -> bool:
    """Whether torch runs this BiRNN as the fused CPU LSTM ``rnn_memory`` counts exactly: float32,
    or bfloat16 on the CPU (oneDNN runs both; a bfloat16 one counted by the other dtypes' fit was
    24-76 % under)."""
    if str(v.params.get("cell", "lstm")) != "lstm":
        return False
    return v.element_bytes == 4 or (v.dtype == "bfloat16" and v.device == "cpu")


def forward_work_bytes(v: NodeView) -> int:
    """What a layer holds while it runs forward beside its inputs and outputs: a Dropout's mask
    (:func:`dropout_mask_bytes`); a loop-of-cells BiRNN, once its steps have run
    (``rnn_memory.loop_forward_work``); an InvConv1x1 in LU form, building its weight from its
    factors before its output exists (``flows.InvConv1x1.matrix``: the identity, L, U and U's
    two terms, then L, U, P L and the weight, five C x C at once; random network 1042, 32
    channels at 4x4 and a batch of one, was 2.4 % under in checkpoint mode, where a recompute
    peaks there)."""
    if lu_invconv(v):
        c = _channels(v)
        return max(0, 5 * c * c * v.element_bytes - v.out_bytes("out"))
    if loop_cell(v) is not None:
        return loop_forward_work(v)
    if v.type == "BiRNN" and v.device == "cpu" and counted_lstm(v):  # what it keeps, and (``lstm_forward_work``)
        steps, _, hidden, layers = rnn_dims(v)
        return _birnn(v).extra_bytes + lstm_forward_work(v.batch, steps, hidden, layers, v.element_bytes)
    return dropout_mask_bytes(v)


def declared_forward_bytes(saves: Saves | None, extra: int) -> int:
    """What a layer's forward holds at its peak beyond its inputs and outputs, as its type declares
    it (``SavedTensors.forward_values``, with ``extra`` the bytes it keeps of its own making): the
    declared figure is beside its outputs and those tensors, which exist by then too (a plugin's
    coupling keeping its tanh as it adds: 18 % under in standard mode without them)."""
    forward = getattr(saves, "forward_work_bytes", 0)
    return forward + extra if forward else getattr(saves, "copied_bytes", 0)


def declared_stop_bytes(v: NodeView, saves: Saves | None, extra: int) -> int | None:
    """``peak.Unit.work_stop``: a measured rule's (:func:`recompute_stop_bytes`); else, for a type
    that declares tensors of its own making (``extra`` bytes) and keeps none of its outputs, what
    it has made by its last kept tensor, where a checkpoint's recompute stops before its outputs
    exist: those tensors and its declared forward work (a plugin's coupling keeping its tanh, then
    adding and joining: 9 % over in checkpoint mode with its output counted there)."""
    if v.type in RULES:
        return recompute_stop_bytes(v)
    if saves is None or not extra or saves.outputs or saves.approximate:
        return None
    return extra + int(saves.forward_work_bytes)


def guard_bytes(v: NodeView) -> int:
    """What a checkpoint's recompute copies of a layer while it runs: a BatchNorm's running
    mean and variance and its batch count (``runtime_recompute.RecomputeGuard`` puts them back
    after the recompute; C + C elements and an int64). Tiny networks at batch 1 were up to
    0.7 % under without them (random networks 18, 42 and 109)."""
    if v.type == "Norm" and v.params.get("kind", "batch") == "batch":
        return 2 * _channels(v) * v.element_bytes + 8
    return 0


def held_bytes(v: NodeView) -> int:
    """Of what a layer keeps beyond the values it names, the bytes its backward does not free,
    which live until the step is over: an InvConv1x1 with a plain weight keeps its log-det's LU
    factors for the log-det's backward (C^2 + C + 2 elements), and a loss that does not read the
    log-det (a classifier's; the sum ``revstudio memory`` measures) never runs that backward: the
    layer's ``logdet`` holds the graph until its next forward (measured, torch 2.13 CPU). A flow's
    negative log-likelihood reads it and frees them at about the layer's backward: counted held,
    its estimate is at most C^2 + C + 2 elements over."""
    if v.type == "InvConv1x1" and not lu_invconv(v):
        c = _channels(v)
        return (c * c + c + 2) * v.element_bytes
    return 0


def lu_invconv(v: NodeView) -> bool:
    """Whether ``v`` is an InvConv1x1 whose weight is a product of LU factors (its default)."""
    return v.type == "InvConv1x1" and bool(v.params.get("lu", True))


def output_last(v: NodeView) -> bool:
    """Whether a layer's last op that keeps anything for backward keeps only its inputs, packed
    before that op makes the layer's output: an InvConv1x1 in LU form, whose 1x1 convolution (an
    einsum's batched product) is last (its log-determinant, a sum of the diagonal, keeps
    nothing). A checkpoint's recompute that stops at it stops before its output exists; a plain
    weight's log-determinant comes after, and keeps the LU factors it makes (measured, torch
    2.13 CPU). Random network 162's segment ending in one was 8.9 % over at batch 2."""
    return lu_invconv(v)


def recompute_stop_bytes(v: NodeView) -> int | None:
    """The most a layer holds beside its inputs in a checkpoint's recompute that stops at its last
    saved tensor, inside it, before its outputs exist (None: no such point): a loop-of-cells
    BiRNN's (``rnn_memory.loop_stop_bytes``); a fused LSTM's, what it keeps, as its last layer's
    second direction returns, before the directions are joined into its output (random sequence
    model 44 was 1.9 % over in checkpoint mode with that output counted)."""
    if v.type != "BiRNN":
        return None
    if counted_lstm(v):
        return lstm_kept_bytes(v.batch, *rnn_dims(v), bool(v.params.get("bias", True)), v.element_bytes)
    return loop_stop_bytes(v) if loop_cell(v) is not None else None


def forward_shared_bytes(v: NodeView) -> int:
    """Of what a layer keeps beyond the values it names (its rule's ``extra_bytes``), the bytes
    that are its input itself as its forward ends: a batch of one InvConv1x1's channels-first
    copy (the rule prices a copy at every batch, so a step's bytes grow by a sample's, and
    backward holds as much either way; its forward makes no second tensor)."""
    if v.type == "InvConv1x1" and v.batch == 1 and prod((v.inputs.get("in") or ())[1:]) > 1:
        return v.in_bytes("in")
    return 0


def _birnn(v: NodeView) -> Saves:
    if counted_lstm(v):  # it keeps a time-major copy of its input, not the input itself
        return Saves(extra_bytes=lstm_kept_bytes(v.batch, *rnn_dims(v), bool(v.params.get("bias", True)),
                                                 v.element_bytes))
    if loop_cell(v) is not None:
        # (at a batch of one its input's time-major copies are views: it keeps the input)
        return Saves(inputs=("in",) if v.batch == 1 else (), extra_bytes=loop_kept_elements(v) * v.element_bytes)
    kept = rnn_elements(RNN_KEPT, v) * v.element_bytes
    return Saves(inputs=("in",), extra_bytes=kept, approximate=True)


def _channels(v: NodeView) -> int:
    shape = v.inputs.get("in")
    return int(shape[0]) if shape else 0


def _actnorm(v: NodeView) -> Saves:
    # y = (x + b) * s keeps the shifted input for the gradient of s, and the scale s and its
    # log-determinant, whatever the batch (measured, torch 2.13 CPU: C + 1 elements)
    const = (_channels(v) + 1) * v.element_bytes
    return Saves(extra_bytes=v.in_bytes("in") + const)


def _invconv(v: NodeView) -> Saves:
    # the weight built from its LU factors keeps three C x C matrices, a C vector and the
    # log-determinant for backward, whatever the batch (measured, torch 2.13 CPU: 3C^2 + C + 1
    # elements; 1,780 B at 12 channels); a plain weight, the LU factors and pivots of its
    # log-determinant (C^2 + C + 2: 632 B at 12 channels)
    c = _channels(v)
    lu = bool(v.params.get("lu", True))
    const = ((3 * c * c + c + 1) if lu else (c * c + c + 2)) * v.element_bytes
    shape = v.inputs.get("in") or ()
    if prod(shape[1:]) > 1:
        # the 1x1 convolution (an einsum) multiplies the channels by a channels-first copy of the
        # input and keeps the copy, not the input (no positions: the input itself). At a batch of
        # one the copy is the input itself; priced as a copy all the same, so that what a step
        # keeps grows with the batch by the same bytes a sample (the memory budget's prices)
        return Saves(extra_bytes=v.in_bytes("in") + const)
    return Saves(inputs=("in",), extra_bytes=const)


def _output(v: NodeView) -> Saves:
    return Saves(inputs=("in",))  # returned to the caller: alive after forward


def unjoined_bytes(head: tuple[str, tuple[tuple[int, ...], ...], tuple[bool, ...]] | None,
                   tail: tuple[str, tuple[tuple[int, ...], ...], tuple[bool, ...]] | None,
                   batch: int, element_bytes: int) -> int | None:
    """Where a body's Concat (``tail``) and the next body's Split (``head``) are fused into
    parts handed on unjoined: the bytes of the parts the second keeps that the first did not
    keep itself. None where they do not match (the joined value is handed on)."""
    if head is None or tail is None or head[1] != tail[1]:
        return None
    return sum(batch * prod(shape) * element_bytes
               for shape, kept, inside in zip(head[1], head[2], tail[2]) if kept and not inside)


def apply_rule(view: NodeView) -> Saves:
    """What a node keeps, by its type's rule; a rule that cannot read its params keeps the
    inputs, marked approximate (being honest beats a crash in the live figures)."""
    try:
        return rule_for(view.type)(view)
    except (TypeError, ValueError, KeyError):
        return rule_for("?")(view)


def between_bytes(body: BodySaves, batch: int, element_bytes: int) -> int:
    """What one copy of a Repeat keeps of the value the copy before it hands on, where the body
    keeps its input: the whole value; between coupling copies the runtime passes the halves
    without concatenating, so only the half F reads; and where a region runs the copies spliced
    and the body ends in a Concat its start splits again (``head_split``, ``tail_cat``), only
    the parts the body keeps that the copy before did not keep itself."""
    if not body.inputs:
        return 0
    parts = unjoined_bytes(body.head_split, body.tail_cat, batch, element_bytes)
    if parts is not None:
        return parts
    return body.input_part_bytes or sum(body.output_bytes.values())


def _group_like(v: NodeView) -> Saves:
    body = v.bodies.get("group")
    if body is None:
        return Saves(inputs=tuple(v.inputs), approximate=True)
    times = int(v.params.get("times", 1) or 1) if v.type == "Repeat" else 1
    extra = body.internal_bytes * times
    if times > 1:  # values passed between copies are new tensors (see between_bytes)
        extra += between_bytes(body, v.batch, v.element_bytes) * (times - 1)
    return Saves(inputs=body.inputs, outputs=body.outputs, extra_bytes=extra)


def coupling_split(params: Mapping[str, Any], shape: ShapeT | None) -> tuple[int, int]:
    """The channels of a coupling node's x1 and x2 (``split``; 0: half), from its input's shape."""
    channels = int(shape[0]) if shape else 0
    c1 = int(params.get("split") or 0) or channels // 2
    return c1, channels - c1


def clamped(params: Mapping[str, Any]) -> bool:
    """Whether an AffineCoupling bounds its log-scale with clamp * tanh(s / clamp)."""
    return float(params.get("clamp", 2.0) or 0.0) > 0


def _coupling(v: NodeView) -> Saves:
    # y1 = x1 + F(x2); y2 = x2 + G(y1); out = cat(y1, y2). x1/x2 are views of
    # the input, y1 is a new half-size tensor, F/G bodies keep what they keep.
    inputs: tuple[str, ...] = ()
    extra = 0
    part = 0
    approximate = False
    for name in ("f", "g", "net"):
        body = v.bodies.get(name)
        if body is None:
            if v.params.get(name):
                approximate = True
            continue
        extra += body.internal_bytes + sum(body.output_bytes[p] for p in body.outputs)
        if body.inputs:
            if name == "g":  # G reads y1, a new tensor
                extra += sum(body.input_bytes[p] for p in body.inputs)
            else:
                inputs = ("in",)
                part += sum(body.input_bytes[p] for p in body.inputs)
    if v.type == "AffineCoupling":
        # y2 = x2 * exp(s) + t keeps x2 (a view of its input) and exp(s); a clamp's
        # clamp * tanh(s / clamp) keeps its tanh: x2's size each (measured, torch 2.13 CPU)
        c1, c2 = coupling_split(v.params, v.inputs.get("in"))
        x2 = v.in_bytes("in") * c2 // (c1 + c2) if c1 + c2 else 0
        extra += (2 if clamped(v.params) else 1) * x2
        inputs = ("in",)
    return Saves(inputs=inputs, extra_bytes=extra, approximate=approximate, input_part_bytes=part)


RULES: dict[str, Rule] = {
    "Output": _output,
    "InvConv1x1": _invconv,
    "BiRNN": _birnn,
    "Norm": _norm,
    "Dropout": _dropout,
    "ActNorm": _actnorm,
    "AdditiveCoupling": _coupling,
    "AffineCoupling": _coupling,
    "Group": _group_like,
    "Repeat": _group_like,
}


def _keeps_every_input(v: NodeView) -> Saves:
    return Saves(inputs=tuple(v.inputs), approximate=True)


def _declared(v: NodeView) -> Saves:
    """What the type declares its backward keeps (``NodeSpec.saved_for_backward``). A declaration
    that raises or cannot be counted is a plugin's bug: named once, and the node is counted as
    keeping every input, marked approximate, so the rest of the estimate still stands."""
    spec = registry.get(v.type)
    try:
        saved = spec.saves_for_backward(v.params, [s or () for s in v.inputs.values()],
                                        list(v.outputs.values()))
    except Exception as exc:  # noqa: BLE001 - a plugin's function, whatever it raises
        spec_failed(registry, v.type, exc, "saved_for_backward")
        return _keeps_every_input(v)
    if saved is None:
        return _keeps_every_input(v)
    wrong = saved.problem() if isinstance(saved, SavedTensors) else f"{saved!r}"
    unknown = [p for p in saved.ports if p not in v.inputs and p not in v.outputs] if wrong is None else []
    if wrong is None and unknown:
        wrong = f"ports={saved.ports!r}: the node has no port {unknown[0]!r}"
    if wrong is not None:
        spec_bug(registry, v.type, f"saved_for_backward gave {wrong}; the memory estimate counts it as keeping "
                                   "every input")
        return _keeps_every_input(v)
    if any(p not in saved.ports or p not in v.outputs for p in saved.freed_unread):
        return _keeps_every_input(v)  # naming an output it does not keep
    return Saves(inputs=tuple(p for p in saved.ports if p in v.inputs),
                 outputs=tuple(p for p in saved.ports if p in v.outputs and p not in v.inputs),
                 extra_bytes=int(saved.extra_bytes(v.batch, v.element_bytes)),
                 forward_work_bytes=int(saved.forward_bytes(v.batch, v.element_bytes)),
                 work_bytes=int(saved.backward_bytes(v.batch, v.element_bytes)),
                 freed_unread=tuple(saved.freed_unread),
                 rerun_extra_bytes=None if saved.rerun_values is None
                 else int(saved.rerun_bytes(v.batch, v.element_bytes)),
                 inverse_dense=bool(saved.inverse_dense))


def rule_for(type_id: str) -> Rule:
    """The rule of a type: the measured one of a built-in layer whose kernels keep more than
    its declaration can say, otherwise its declaration; an undeclared type (a plugin's) is
    assumed to keep all its inputs, marked approximate."""
    rule = RULES.get(type_id)
    if rule is not None:
        return rule
    return _declared if registry.find(type_id) is not None else _keeps_every_input
