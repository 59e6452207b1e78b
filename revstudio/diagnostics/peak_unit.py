"""What the peak walk (``peak.simulate``) reads and returns: a unit and a walk's findings.

A *unit* is one thing forward runs and backward undoes (a layer, a reversible region, a
checkpointed segment), described by what it reads, makes, keeps and holds while it runs;
a *walk* is the peak found, where, and what later walks need from it. Torch-free.
"""
from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

Value = tuple[str, str]


@dataclass(slots=True)
class Unit:
    """One thing forward runs and backward undoes."""

    name: str
    reads: list[Value]               # values read from before the unit (raw, not resolved views)
    makes: list[Value]               # values it produces
    saved: AbstractSet[Value] = field(default_factory=frozenset)  # storages (resolved) it keeps for backward
    extra: int = 0                   # bytes of internal tensors it keeps for backward
    params: int = 0                  # parameter bytes: their gradients appear in its backward
    fresh: bool = True               # backward allocates its inputs' gradients (not a pass-through)
    work_fwd: int = 0                # transient bytes while it runs forward
    work_bwd: int = 0                # transient bytes while it runs backward
    grad: bool = True                # its outputs need gradients (its backward runs)
    # a checkpoint segment: backward first recomputes it, then runs its backward; ``work_bwd`` is
    # the peak of that recompute's own walk (``peak_inline.Inline.recompute``), which counts the
    # gradients of its outputs and the new ones of its inputs, so the unit adds neither
    late: bool = False
    # a reversible region: the most its backward holds once the gradients of its outputs are
    # gone (net of them). The runtime releases a gradient autograd handed it once no step reads
    # it (after the last two computing steps, which turn it into the streams' own gradients),
    # where it is its own buffer, not a view or alias of another gradient; ``work_bwd`` is then
    # the most before that moment
    work_spent: int | None = None
    # transient bytes once its backward has returned and its outputs' gradients are gone: autograd
    # copying a weight's gradient made in channels_last into the parameter's own layout
    work_after: int = 0
    # of ``extra``, the bytes that are new as its forward ends (None: all), where a checkpoint's
    # recompute stops: a batch of one InvConv1x1's channels-first copy is its input itself
    extra_fwd: int | None = None
    # of ``extra``, the bytes its backward does not free: they live until the step is over (a
    # plain-weight InvConv1x1's log-det factors where the loss reads no log-det); a checkpoint
    # segment's, those of its layers, made again by its recompute
    extra_held: int = 0
    # the bytes of the buffer a read's gradient is (where a late unit hands one on as a view of
    # its outputs' gradient: ``Walk.grads``; else the read's own bytes)
    grad_bytes: Mapping[Value, int] | None = None
    # (reads, bytes): the reads a fresh unit hands gradients as views of one buffer of those
    # bytes: a region whose backward makes a joined gradient a Concat's backward slices apart
    # (``peak_steps.joined_grads``); 0 bytes: views of its first output's gradient
    joined: tuple[AbstractSet[Value], int] | None = None
    # what its backward holds more where ``extra``'s bytes that are its input itself (``extra_fwd``)
    # are not counted, that input counted beside the walk (a checkpointed segment's input)
    work_shared: int = 0
    # a late unit's outputs whose gradient its recompute's walk seeded as a larger buffer (a view
    # of one the next segment hands back: ``Walk.grads``), and its bytes
    seed_bytes: Mapping[Value, int] | None = None
    # a late unit inside another's recompute: ``work_bwd`` where its inputs that none of its layers
    # keeps are gone once its recompute has run (``peak_recompute.recompute_walk``); None: the same
    work_nested: int | None = None
    # a late unit: ``work_bwd`` split at the moment the checkpoint lets go of the inputs it kept,
    # once the backward of the first of its layers that saves anything has run (the saved tensors'
    # hooks hold the inputs until then): the most before it, and the most after it (None: no
    # moment comes after it), with those inputs still counted (``Walk.held``, ``Walk.released``)
    work_held: int = 0
    work_released: int | None = None
    # bytes a checkpoint's recompute copies of it while the recompute runs (a BatchNorm's running
    # statistics: ``save_rules.guard_bytes``)
    guard_bytes: int = 0
    # its last saving op packs inputs only and makes its outputs after (an LU InvConv1x1's einsum):
    # a recompute that stops at it stops before its outputs exist
    output_last: bool = False
    # what it holds beside what it read where a recompute stops at its last saved tensor, inside
    # it, before its outputs exist (None: its forward work, beside its outputs): a loop-of-cells
    # BiRNN's (``save_rules.recompute_stop_bytes``)
    work_stop: int | None = None
    # what its backward makes before it first unpacks a saved tensor, so that a recompute it
    # starts runs beside it, and so does the rest of its own backward (``peak_invconv.unpack_bytes``)
    unpack_bytes: int = 0
    # of ``params``, the bytes of the gradients its backward makes once its work is gone: an
    # ActNorm's shift's, made after its scale's gradient is summed from a product of its output's
    # gradient. Under a checkpoint's recompute (``early_stop``) all of them: the product's other
    # factor, a recomputed saved tensor, goes as that sum is made (random networks 601 in standard
    # mode and 1320 in checkpoint mode at batch 1: 0.16 % and 0.52 % over counting all of them
    # beside the product)
    params_last: int = 0
    # its backward hands its inputs their gradients as views of new buffers (a Linear's input
    # flattened past the batch: its gradient is the matrix product's, reshaped), which a region
    # reading them may not release
    grads_viewed: bool = False
    # a layer's moments once nothing of it reads its outputs' gradients, counted with them: gone
    # where no other value holds them (``dying``, views included: autograd frees a buffer with its
    # last view), not where they are another's too (a coupling's F output's gradient is y1's, which
    # x1 is handed): a loop-of-cells BiRNN's last direction's end (``rnn_memory.loop_backward_moments``)
    work_outs: int | None = None
    # of those, a moment after it let go of the storages it alone keeps (``_freed``), counted with
    # them: a batch of one loop-of-cells BiRNN summing its two directions' input gradients once its
    # input weights' gradient let go of its input; None: no such moment
    work_freed: int | None = None
    # its backward hands each input its output's gradient itself, not a view of it (an add): a
    # region reading one may release it as its own where it is no view (``peak_grads.dying``)
    aliases: bool = False
    # (a region) its outputs a later step takes as its stream: backward reads their gradients on
    # until it has rebuilt them, past the release of the others' (``work_spent``)
    grads_read_on: AbstractSet[Value] = field(default_factory=frozenset)
    # a reversible region's outputs that nothing after it differentiates (a wired block's Split
    # part a skip add took the place of): autograd hands its backward a gradient of zeros for
    # each, materialised, which the runtime releases with its outputs' others
    zero_grads: tuple[Value, ...] = ()
    # the storages of ``reads`` and ``makes`` (resolved once; units are shared between the modes)
    read_bases: list[Value | None] | None = field(default=None, repr=False, compare=False)
    make_bases: list[Value | None] | None = field(default=None, repr=False, compare=False)


@dataclass
class Walk:
    """What the simulation found: the peak, where, and what was alive after forward."""

    peak: int
    kept: int
    phase: str
    at: str
    # of the values that exist before the walk (``outside``), those whose gradient at its end is
    # a buffer larger than they are: a view of one of the seeds (a coupling's x2, whose gradient
    # y2 = x2 + G(y1) hands on as a view of the joined output's), and that buffer's bytes
    grads: dict[Value, int] = field(default_factory=dict)
    # the most its forward held (without ``early_stop``), the values it makes included
    forward: int = 0
    # of those values, the ones whose gradients are one buffer (an add hands each operand the
    # same one), and its bytes (``Unit.joined``)
    joins: list[tuple[frozenset[Value], int]] = field(default_factory=list)
    # (``early_stop``) ``peak`` split where the checkpoint lets go of the inputs it kept: the most
    # before that moment, and the most after it (None where no moment comes after it)
    held: int = 0
    released: int | None = None
