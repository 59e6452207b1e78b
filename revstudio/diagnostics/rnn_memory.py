"""What torch's fused CPU LSTM keeps for backward and allocates in it, counted from shapes.

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

from typing import Any

PAGE = 4096  # oneDNN starts every workspace part on a page
F32 = 4


def good_ld(dim: int, elem: int = F32) -> int:
    """oneDNN's leading dimension for ``dim`` values: a multiple of 64 bytes, not of 1 KiB."""
    step = 64 // elem
    ld = -(-dim // step) * step
    return ld + step if ld % 256 == 0 else ld


def _page(n: int) -> int:
    return -(-n // PAGE) * PAGE


def workspace_bytes(batch: int, steps: int, inputs: int, hidden: int) -> int:
    """The workspace one layer and direction keeps (a training forward, float32)."""
    states = 2 * (steps + 1) * batch  # (layers + 1) x (steps + 1) x batch, one layer per call
    wide = good_ld(max(inputs, hidden))
    parts = (
        steps * batch * good_ld(4 * hidden),  # the four gates
        steps * batch * good_ld(hidden),      # h (the projection's, kept even without one)
        states * wide,                        # layer and iteration states (shared)
        states * hidden,                      # c states
        states * wide,                        # gradients of the layer states
        states * wide,                        # gradients of the iteration states
        states * hidden,                      # gradients of the c states
    )
    return sum(_page(p * F32) for p in parts)


def lstm_kept_bytes(batch: int, steps: int, features: int, hidden: int, layers: int) -> int:
    """Bytes a bidirectional LSTM keeps after forward besides its output: the time-major
    copy of its input, each upper layer's input, per layer and direction the workspace,
    the output sequence and the last h and c, and the zero initial h and c."""
    total = steps * batch * features * F32
    for layer in range(max(1, layers)):
        size = features if layer == 0 else 2 * hidden
        if layer:
            total += steps * batch * 2 * hidden * F32
        total += 2 * (workspace_bytes(batch, steps, size, hidden) + (steps + 2) * batch * hidden * F32)
    return total + 2 * 2 * max(1, layers) * batch * hidden * F32


def lstm_backward_bytes(batch: int, steps: int, features: int, hidden: int, layers: int) -> int:
    """What a bidirectional LSTM's backward allocates at its peak on top of what it keeps and
    its output's gradient: the first call (last layer, one direction) makes its input's
    gradient, its weights' gradients and the gradients of the initial h and c, while every
    workspace is still alive (later calls run after earlier workspaces are freed)."""
    top = features if max(1, layers) == 1 else 2 * hidden
    weights = 4 * hidden * (top + hidden) + 2 * 4 * hidden  # W_ih, W_hh, two biases
    return (steps * batch * top + weights + 2 * batch * hidden) * F32


def birnn_backward_work(view: Any, parameters: int, elem: int, kept: int, input_grad: bool) -> int:
    """Transient bytes of a BiRNN layer's own backward beyond its inputs' gradients (the walk's
    ``node_work``): the fused LSTM counted whole (its input's and weights' gradients, which the
    walk adds itself, taken off), a loop of cells per ``save_rules.loop_backward_work`` (``kept``:
    what it keeps), else the fused kernel's gate gradients, built at once. ``input_grad``: its
    input needs a gradient."""
    from .save_rules import RNN_BACKWARD, counted_lstm, loop_backward_work, loop_cell, rnn_dims, rnn_elements

    if counted_lstm(view):
        work = lstm_backward_bytes(view.batch, *rnn_dims(view)) - parameters * elem
        return work - view.in_bytes("in") if input_grad else work
    if loop_cell(view) is not None:
        return loop_backward_work(view, parameters, kept, input_grad)
    return rnn_elements(RNN_BACKWARD, view) * elem
