"""What torch's CPU BiRNNs keep for backward and allocate in it, counted from shapes.

A GRU or plain RNN runs as a loop of cells (``LOOP_CELLS``), its steps' tensors counted exactly.
torch runs a float32 LSTM on the CPU through oneDNN (``aten.mkldnn_rnn_layer``), one call
per layer and direction. Each call keeps its output sequence, its last h and c, and a
*workspace* (a uint8 tensor) whose size follows oneDNN's RNN workspace layout: seven
parts (the gates; the hidden states, projected; the layer states, the c states and the
three matching gradient buffers), each ``steps x batch x ld`` or ``2 x (steps + 1) x
batch x ld`` float32 values, where a leading dimension ``ld`` is padded to 64 bytes and
moved off multiples of 1 KiB (oneDNN's ``get_good_ld``), and every part starts on a
4 KiB page. Checked byte for byte against exact live-tensor accounting
(``revstudio.diagnostics.memory``) on torch 2.13 over batch 1..64, length 1..64, input
7..200, hidden 8..128, one and two layers (benchmarks/README.md, "Peak estimate").
Torch-free.
"""
from __future__ import annotations

from math import prod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .save_rules import NodeView

PAGE = 4096  # oneDNN starts every workspace part on a page
F32 = 4


def good_ld(dim: int, elem: int = F32) -> int:
    """oneDNN's leading dimension for ``dim`` values: a multiple of 64 bytes, not of 1 KiB."""
    step = 64 // elem
    ld = -(-dim // step) * step
    return ld + step if ld % 256 == 0 else ld


def _page(n: int) -> int:
    return -(-n // PAGE) * PAGE


# The bytes of a value in each of oneDNN's workspace parts (``workspace_bytes``), by the model's
# element size: a bfloat16 LSTM keeps its gates and states in bfloat16 and two of its three layer
# state gradients and its c state gradients in float32 (fitted to 24 random sizes, exact, torch
# 2.13; which of the equal-sized parts is which is not told apart by their sum)
WORKSPACE_PARTS = {4: (4, 4, 4, 4, 4, 4, 4), 2: (2, 2, 2, 2, 4, 4, 4)}


def workspace_bytes(batch: int, steps: int, inputs: int, hidden: int, elem: int = F32) -> int:
    """The workspace one layer and direction keeps (a training forward, float32 or bfloat16)."""
    states = 2 * (steps + 1) * batch  # (layers + 1) x (steps + 1) x batch, one layer per call
    sizes = WORKSPACE_PARTS.get(elem, WORKSPACE_PARTS[F32])
    parts = (
        steps * batch * good_ld(4 * hidden, sizes[0]),  # the four gates
        steps * batch * good_ld(hidden, sizes[1]),      # h (the projection's, kept even without one)
        states * good_ld(max(inputs, hidden), sizes[2]),  # layer and iteration states (shared)
        states * hidden,                                # c states
        states * good_ld(max(inputs, hidden), sizes[4]),  # gradients of the layer states
        states * good_ld(max(inputs, hidden), sizes[5]),  # gradients of the iteration states
        states * hidden,                                # gradients of the c states
    )
    return sum(_page(n * size) for n, size in zip(parts, sizes))


def lstm_kept_bytes(batch: int, steps: int, features: int, hidden: int, layers: int, bias: bool = True,
                    elem: int = F32) -> int:
    """Bytes a bidirectional LSTM keeps after forward besides its output: the time-major
    copy of its input, each upper layer's input, per layer and direction the workspace,
    the output sequence and the last h and c, and the zero initial h and c. Without
    ``bias``, torch hands oneDNN zeros the shape of each weight as its two biases, and
    autograd keeps them: per layer and direction, the size of its weights again. ``elem``: the
    model's element size (a bfloat16 model's tensors, and part of its workspace, take 2)."""
    total = steps * batch * features * elem
    for layer in range(max(1, layers)):
        size = features if layer == 0 else 2 * hidden
        if layer:
            total += steps * batch * 2 * hidden * elem
        total += 2 * (workspace_bytes(batch, steps, size, hidden, elem) + (steps + 2) * batch * hidden * elem)
        if not bias:
            total += 2 * 4 * hidden * (size + hidden) * elem
    return total + 2 * 2 * max(1, layers) * batch * hidden * elem


def lstm_forward_work(batch: int, steps: int, hidden: int, layers: int, elem: int = F32) -> int:
    """What a fused bidirectional LSTM holds beside what it keeps as its node makes its output: the
    last layer's two directions joined (``out``, time-major) and the returned last h and c
    (stacked), alive while the node copies ``out`` into its channels-first output
    (``layers.BiRNN.forward``). token_sequence at batch 8 peaked there, 2.5 % over the estimate
    without them (measured, torch 2.13 CPU)."""
    return (steps * batch * 2 * hidden + 2 * 2 * max(1, layers) * batch * hidden) * elem


def lstm_backward_bytes(batch: int, steps: int, features: int, hidden: int, layers: int, elem: int = F32,
                        bias: bool = True) -> int:
    """What a bidirectional LSTM's backward allocates at its peak on top of what it keeps and
    its output's gradient, walked call by call as torch runs them (measured, torch 2.13): one
    oneDNN call per layer and direction, the top layer's first, each making its input's
    gradient, its weights' and its initial h and c's (all in float32) while the workspaces of
    the calls after it are alive; once it has run its workspace, output and last and initial
    states go, its input's gradient waits for the other direction's (the two summed are the
    layer below's output's) and its weights' stay. A bfloat16 one's are cast one by one, each
    float32 one let go once cast: most as the input weights' is cast, or as the recurrent
    weights' is, the input weights' float32 one gone. ``elem``: the model's element size. Without
    ``bias`` the zero biases' gradients are dropped and the zeros a call kept go with it.
    (Counted at the first call only, the float32 one was up to 17 % under where its weights are
    large beside length x batch, a bfloat16 one 24-76 % under without the casts.)"""
    best = done = freed = 0
    for layer in reversed(range(max(1, layers))):
        size = features if layer == 0 else 2 * hidden
        ih, hh = 4 * hidden * size, 4 * hidden * hidden
        weights = ih + hh + 2 * 4 * hidden  # W_ih, W_hh, two biases
        left = (weights if bias else ih + hh) * elem  # the weights' gradients it leaves
        zeros = 0 if bias else (ih + hh) * elem  # (``lstm_kept_bytes``)
        cast = 0 if elem == F32 else max(ih * elem, (ih + hh) * elem - ih * F32)
        made = (steps * batch * size + 2 * batch * hidden) * F32  # its input's, h0's and c0's
        for first in (True, False):
            waiting = 0 if first else steps * batch * size * F32  # the other direction's input's
            best = max(best, done + waiting + made + weights * F32 + cast - freed)
            done += left + 2 * batch * hidden * F32
            freed += workspace_bytes(batch, steps, size, hidden, elem) + (steps + 4) * batch * hidden * elem + zeros
        if layer:  # the layer below's output, this layer's input
            freed += steps * batch * size * elem
    return best


def birnn_backward_work(view: Any, parameters: int, elem: int, kept: int, input_grad: bool) -> int:
    """Transient bytes of a BiRNN layer's own backward beyond its inputs' gradients (the walk's
    ``node_work``): the fused LSTM counted whole (its input's and weights' gradients, which the
    walk adds itself, taken off), a loop of cells per :func:`loop_backward_work` (``kept``:
    what it keeps), else the fused kernel's gate gradients, built at once. ``input_grad``: its
    input needs a gradient."""
    from .save_rules import RNN_BACKWARD, counted_lstm, rnn_elements

    if counted_lstm(view):
        work = lstm_backward_bytes(view.batch, *rnn_dims(view), elem, bool(view.params.get("bias", True)))
        work -= parameters * elem
        return work - view.in_bytes("in") if input_grad else work
    if loop_cell(view) is not None:
        return loop_backward_work(view, parameters, kept, input_grad)
    return rnn_elements(RNN_BACKWARD, view) * elem


def rnn_dims(v: NodeView) -> tuple[int, int, int, int]:
    """(length, features, hidden, layers) of a BiRNN: (C, L) or (C, H, W) read as a sequence
    over the last axis (DESIGN section 4)."""
    shape = v.inputs.get("in") or ()
    length = shape[-1] if shape else 0
    features = prod(shape[:-1]) if shape else 0
    return (length, features, int(v.params.get("hidden_size", 0) or 0), max(1, int(v.params.get("num_layers", 1) or 1)))


# Cells torch runs on the CPU as a loop of steps (counted, torch 2.13: exact over batch, length,
# sizes and layers): their gates per hidden unit; what each layer keeps for both directions per
# step and hidden unit, and per sample and hidden unit; the final states alive at forward's end,
# per sample and hidden unit
LOOP_CELLS = {"gru": (3, 14, 0, 2), "rnn_tanh": (1, 2, 2, 0), "rnn_relu": (1, 2, 2, 0),
              "lstm": (4, 14, 0, 4)}  # (an LSTM oneDNN does not run: float16, float64)


def loop_cell(v: NodeView) -> tuple[int, int, int, int] | None:
    """(gates, kept a step, kept a sample, final states) of a BiRNN torch runs as a loop of
    cells on the CPU (``LOOP_CELLS``): a GRU or plain RNN, or an LSTM of a dtype oneDNN does not
    run (float16, float64; priced by the fused kernel's fit, one was up to 2.3x over)."""
    from .save_rules import counted_lstm

    if v.type != "BiRNN" or v.device != "cpu" or counted_lstm(v):
        return None
    return LOOP_CELLS.get(str(v.params.get("cell", "lstm")))


def loop_input_copies(batch: int, length: int, features: int) -> int:
    """Elements of a loop-of-cells BiRNN's two time-major copies of its input, which its first
    layer's projections read (at a batch of one they are views of the input: none)."""
    return 2 * batch * length * features if batch > 1 else 0


def loop_kept_elements(v: NodeView) -> int:
    """Elements a loop-of-cells BiRNN (:func:`loop_cell`) keeps: two copies of its input for the
    first layer's projections (not the input itself); per layer and both directions, its gates
    and states (``LOOP_CELLS``); an upper layer also the layer below's output. (What else it
    keeps is its weights, transposed: views of them.)"""
    _, per_step, per_sample, _ = loop_cell(v) or (0, 0, 0, 0)
    length, features, hidden, layers = rnn_dims(v)
    b = v.batch
    total = loop_input_copies(b, length, features)
    for layer in range(layers):
        total += per_step * b * length * hidden + per_sample * b * hidden + (b * length * 2 * hidden if layer else 0)
    return total


def loop_forward_work(v: NodeView) -> int:
    """What a loop-of-cells BiRNN holds while it runs forward beside its input and output: once
    its steps have run, what they keep, its last direction's input projection (its gates a
    step), its final states and the per-direction stacks of its steps' outputs and their
    concatenation, before its output is made of them (measured, torch 2.13: the output's size
    twice, the output itself not yet made)."""
    cell = loop_cell(v) or (0, 0, 0, 0)
    length, _, hidden, _ = rnn_dims(v)
    transient = v.batch * length * cell[0] * hidden + cell[3] * v.batch * hidden
    return (loop_kept_elements(v) + transient) * v.element_bytes + v.out_bytes("out")


def loop_stop_bytes(v: NodeView) -> int:
    """The most a loop-of-cells BiRNN (:func:`loop_cell`) holds beside its input in a checkpoint's
    recompute that stops at its last saved tensor, before its output exists. It saves last in
    its last direction's last step; there it holds what its steps keep, that direction's input
    projection and the final states, and the first direction's stack of its outputs (half the
    output: the second's and their concatenation are not made). Where a step keeps less than two
    projections' worth (a plain RNN), the most is earlier, as the last direction's projection is
    made: the product and its bias's sum beside the first direction's projection, which lives
    until then, and without the steps the last direction keeps. (:func:`loop_forward_work`
    counts the stacks and the output whole: a wired block whose F is a lone GRU was 5.7 % over
    in checkpoint mode at batch 8, a plain RNN 7.2 %; measured, torch 2.13.)"""
    gates, per_step = (loop_cell(v) or (0, 0, 0, 0))[:2]
    length, _, hidden, _ = rnn_dims(v)
    steps = v.batch * length * hidden  # (elements per gate or state over the sequence)
    earlier = max(0, 2 * gates * steps - per_step // 2 * steps)
    return loop_forward_work(v) - v.out_bytes("out") // 2 + earlier * v.element_bytes


def loop_backward_work(v: NodeView, parameters: int, kept: int, input_grad: bool) -> int:
    """A loop-of-cells BiRNN's backward beside what the walk counts at its unit (its kept bytes,
    its output's gradient, its input's and all its weights' gradients), walked as torch runs it
    (measured, torch 2.13, per step): layer by layer from the top, each layer's last direction
    first and whole before the other, each step freeing what it kept. In a direction's second
    step its recurrent weights' gradient so far, the step's and their sum (out of place) are
    alive beside the gradients of every direction done before it; at a direction's end, its
    input projections' stacked gradients, its input's gradient and its input weights'. An upper
    layer's (or a needed input's) first direction's input gradient waits beside the second
    direction, then the two are summed. It ends with every weight's gradient, the input's copies
    the input weights' gradients read and one direction's stacked projection gradients. (Counted
    at its two ends only, a plain RNN whose weights are large beside length x batch was 8-11 %
    under, a GRU 6-15 %.) Its output's gradient counted gone in its last direction and its input
    kept to the end: :func:`loop_backward_moments` parts them."""
    plain, spent, freed = loop_backward_moments(v, parameters, kept, input_grad)
    length, _, hidden, _ = rnn_dims(v)
    out = v.batch * length * 2 * hidden * v.element_bytes  # its output's gradient
    return max(plain, spent - out, (spent if freed is None else freed) - out)


def loop_backward_moments(v: NodeView, parameters: int, kept: int,
                          input_grad: bool) -> tuple[int, int, int | None]:
    """:func:`loop_backward_work` as three figures (bytes, beside what the walk counts at the
    unit): the moments before its last direction's end; those after it, with its output's
    gradient still counted (nothing of the layer reads it then: it is gone where it is the
    layer's alone, and lives on where it is another value's too, as a coupling's F output's
    gradient is y1's, handed on to x1); and, at a batch of one, the moment its first layer sums
    its two directions' input gradients, with its input still counted: the stacked projection
    gradients are gone by then and so is the input, which the projections read as views, where
    only the layer keeps it. Measured step by step (torch 2.13): the stack, then the input, then
    the sum; sequence model 59's peak is the stack's moment (7,088 B), 104 B above the figure
    that held the stack and the sum at one moment with the output's gradient gone. (The third is
    None where that moment does not come.)"""
    gates, per_step, _, _ = loop_cell(v) or (1, 0, 0, 0)
    length, features, hidden, layers = rnn_dims(v)
    b, elem = v.batch, v.element_bytes
    hh, gh = gates * hidden * hidden, gates * hidden
    bias = 2 * gh if v.params.get("bias", True) else 0
    step = per_step // 2 * b * hidden  # what one step of one direction keeps
    in_grad = v.in_bytes("in") // elem if input_grad else 0
    end = (loop_input_copies(b, length, features) + b * length * gh) * elem - kept
    plain = spent = end
    freed: int | None = None
    done = released = 0
    for layer in reversed(range(layers)):
        size = features if layer == 0 else 2 * hidden
        weights = gh * size + hh + bias
        grads = layer > 0 or input_grad  # its input's gradient, made per direction, the two summed
        for first in (True, False):
            other = b * length * size if grads and not first else 0  # the first direction's
            if length >= 2:  # its second step: the recurrent gradient so far, the step's and their sum
                mid = done + 3 * hh + bias // 2 - released - 2 * step + other - parameters - in_grad
                plain = max(plain, mid * elem)
            released += step * length
            done += weights
            made = b * length * size if grads else 0
            # the two are summed once the stack has gone and the weights' gradient let the layer's
            # input go (an upper layer's: the layer below's output; the first's: the direction's own
            # time-major copy, as each direction's weights' gradient is made; at a batch of one the
            # copies are views of the input itself, which the walk lets go of: ``freed``)
            copy = 0 if layer else loop_input_copies(b, length, features) // 2
            summed = made - (b * length * size if layer else copy) if other else 0
            at_end = done + made + other - released - parameters - in_grad
            if first:
                plain = max(plain, (at_end + b * length * gh) * elem)
            elif layer == 0 and b == 1 and summed:  # (its output's gradient still counted)
                spent = max(spent, (at_end + b * length * gh) * elem)
                freed = max(freed if freed is not None else end, (at_end + summed) * elem)
            else:
                spent = max(spent, (at_end + max(b * length * gh, summed)) * elem)
            released += copy
        released += b * length * size if layer else 0
    return plain, spent, freed
