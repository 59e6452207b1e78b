"""Plain layers of the node catalog, following the tuple convention.

Every module's ``forward(*inputs)`` returns a tuple of outputs. Standard layers
subclass their ``torch.nn`` counterpart so ``state_dict`` keys stay the ones
PyTorch users know (``weight``, ``bias``, ``running_mean``, ``weight_ih_l0`` ...).
Torch only: this file is inlined verbatim into exported code.
"""

import torch
import torch.nn.functional as F
from torch import nn

# mypy: disable-error-code="misc,override"
# (the layers below deliberately change torch's forward to return a tuple)

INIT_SCHEMES = (
    "default", "zeros", "xavier_uniform", "xavier_normal",
    "kaiming_uniform", "kaiming_normal", "orthogonal",
)


def init_parameters(module: nn.Module, scheme: str) -> None:
    """Re-initialise the weights of ``module``; "default" keeps PyTorch's own init.

    Any non-default scheme zeroes the biases (and every 1-D parameter), which is
    what the named schemes usually mean in papers and keeps "zeros" exact.
    """
    if scheme == "default":
        return
    if scheme not in INIT_SCHEMES:
        raise ValueError(f"unknown init {scheme!r}; use one of {', '.join(INIT_SCHEMES)}")
    with torch.no_grad():
        for param in module.parameters():
            if scheme == "zeros" or param.dim() < 2:
                param.zero_()
            elif scheme == "xavier_uniform":
                nn.init.xavier_uniform_(param)
            elif scheme == "xavier_normal":
                nn.init.xavier_normal_(param)
            elif scheme == "kaiming_uniform":
                nn.init.kaiming_uniform_(param, nonlinearity="relu")
            elif scheme == "kaiming_normal":
                nn.init.kaiming_normal_(param, nonlinearity="relu")
            else:
                nn.init.orthogonal_(param)


class TupleOut:
    """Mixin: call the wrapped torch layer and return its output as a 1-tuple."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (super().forward(x),)  # type: ignore[misc]


class Conv1d(TupleOut, nn.Conv1d):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding="same", dilation: int = 1, groups: int = 1, bias: bool = True,
                 init: str = "default") -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                         dilation=dilation, groups=groups, bias=bias)
        init_parameters(self, init)


class Conv2d(TupleOut, nn.Conv2d):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding="same", dilation: int = 1, groups: int = 1, bias: bool = True,
                 init: str = "default") -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                         dilation=dilation, groups=groups, bias=bias)
        init_parameters(self, init)


class Linear(nn.Linear):
    """``nn.Linear`` applied to the input flattened past the batch dimension."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 init: str = "default") -> None:
        super().__init__(in_features, out_features, bias=bias)
        init_parameters(self, init)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (super().forward(x.flatten(1)),)


class BiRNN(nn.Module):
    """A bidirectional RNN/LSTM/GRU over the last axis of a channel-first input.

    (B, C, L) reads L steps of C features; (B, C, H, W) reads W steps of C*H
    features. The output is channel-first again: (B, 2*hidden_size, steps).
    """

    def __init__(self, input_size: int, hidden_size: int, cell: str = "lstm", num_layers: int = 1,
                 bias: bool = True, init: str = "default", node: str = "") -> None:
        super().__init__()
        self.node = node  # the node id, for messages (torch's own name no node)
        common = {"num_layers": num_layers, "bias": bias, "batch_first": True, "bidirectional": True}
        if cell == "lstm":
            self.rnn: nn.Module = nn.LSTM(input_size, hidden_size, **common)
        elif cell == "gru":
            self.rnn = nn.GRU(input_size, hidden_size, **common)
        elif cell in ("rnn_tanh", "rnn_relu"):
            self.rnn = nn.RNN(input_size, hidden_size, nonlinearity=cell[4:], **common)
        else:
            raise ValueError(f"unknown cell {cell!r}; use rnn_tanh, rnn_relu, lstm or gru")
        init_parameters(self, init)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        steps = x.shape[-1]
        sequence = x.reshape(x.shape[0], -1, steps).transpose(1, 2)  # (B, steps, features)
        if (isinstance(self.rnn, nn.LSTM) and sequence.device.type == "cpu" and torch.is_autocast_enabled("cpu")
                and sequence.dtype != torch.get_autocast_dtype("cpu")):
            # CPU autocast sends a float32 LSTM to oneDNN's low-precision kernel without asking
            # whether the CPU has one (without AVX512-BF16 oneDNN refuses: "could not create a
            # primitive descriptor"). Given the low-precision input itself, torch asks first and
            # takes its own kernel where oneDNN has none; the result is the same dtype either way.
            sequence = sequence.to(torch.get_autocast_dtype("cpu"))
        try:
            out, _ = self.rnn(sequence)
        except RuntimeError as exc:
            if "Batching rule not implemented" not in str(exc):
                raise
            where = f"node {self.node!r} (BiRNN)" if self.node else "a BiRNN layer"
            kind = type(self.rnn).__name__
            raise RuntimeError(
                f"{where}: torch.vmap (and jacrev, jacfwd, hessian, which use it) cannot run torch's "
                f"{kind}: it has no batching rule for recurrent layers. The model takes a whole batch, so "
                "call it on the batch instead of vmapping over samples, or loop over the samples "
                "(torch.stack([f(x[i]) for i in range(len(x))]); per-sample gradients likewise with "
                "torch.func.grad per sample)") from None
        # contiguous: downstream views (Split, Reshape) expect the usual memory layout
        return (out.transpose(1, 2).contiguous(),)


class Activation(nn.Module):
    """An elementwise nonlinearity chosen by name; optionally in place."""

    def __init__(self, fn: str = "relu", inplace: bool = False, negative_slope: float = 0.01) -> None:
        super().__init__()
        self.fn = fn
        self.inplace = inplace
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        fn, inplace = self.fn, self.inplace
        if fn == "relu":
            y = F.relu(x, inplace=inplace)
        elif fn == "tanh":
            y = x.tanh_() if inplace else torch.tanh(x)
        elif fn == "sigmoid":
            y = x.sigmoid_() if inplace else torch.sigmoid(x)
        elif fn == "gelu":
            y = F.gelu(x)
        elif fn == "leaky_relu":
            y = F.leaky_relu(x, self.negative_slope, inplace=inplace)
        elif fn == "elu":
            y = F.elu(x, inplace=inplace)
        elif fn == "softplus":
            y = F.softplus(x)
        elif fn == "identity":
            y = x
        else:
            raise ValueError(f"unknown activation {fn!r}")
        return (y,)

    def extra_repr(self) -> str:
        return f"fn={self.fn!r}, inplace={self.inplace}"


class BatchNorm1d(TupleOut, nn.BatchNorm1d):
    pass


class BatchNorm2d(TupleOut, nn.BatchNorm2d):
    pass


class LayerNorm(TupleOut, nn.LayerNorm):
    pass


class GroupNorm(TupleOut, nn.GroupNorm):
    pass


class InstanceNorm1d(TupleOut, nn.InstanceNorm1d):
    pass


class InstanceNorm2d(TupleOut, nn.InstanceNorm2d):
    pass


class MaxPool1d(TupleOut, nn.MaxPool1d):
    pass


class MaxPool2d(TupleOut, nn.MaxPool2d):
    pass


class AvgPool1d(TupleOut, nn.AvgPool1d):
    pass


class AvgPool2d(TupleOut, nn.AvgPool2d):
    pass


class GlobalAvgPool(nn.Module):
    """Mean over every axis after the channels: (B, C, ...) -> (B, C). Taken over those axes
    as they lie (no flattened copy of a channels_last input), so its input's gradient is a
    tensor of its own, not a view: a reversible region before it can release that gradient
    as soon as its steps stop reading it."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if x.dim() < 3:
            return (x.flatten(2).mean(2),)  # (refused as before: no axis after the channels)
        return (x.mean(tuple(range(2, x.dim()))),)


class Dropout(nn.Dropout):
    """``nn.Dropout`` whose mask does not depend on how the input lies in memory.

    An input in another layout (channels_last: reversible regions keep their streams
    in it on the CPU) gets the very mask a contiguous input of that shape would get
    from the same random state, so standard and reversible mode drop the same values.
    """

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if not (self.training and self.p > 0) or x.is_contiguous():
            return (super().forward(x),)
        mask = F.dropout(torch.ones(x.shape, dtype=x.dtype, device=x.device), self.p, True)
        return (x.mul_(mask) if self.inplace else x * mask,)
