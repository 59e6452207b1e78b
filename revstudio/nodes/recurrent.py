"""The bidirectional recurrent layer (BiRNN) and its size arithmetic.

It reads the last axis as time: (C, L) is L steps of C features, (C, H, W) is W
steps of C*H features; the output is channel-first, (2*hidden_size, steps), so it
can follow an Input directly and feed convolutions or other BiRNNs.
"""
from __future__ import annotations

from revstudio.core.params import Bool, Choice, Int
from revstudio.core.spec import BuildContext, InferContext, NodeSpec, ShapeT

from ._common import ModuleRecipe, builder, init_param, need_ndim, numel, recipe

GATES = {"rnn_tanh": 1, "rnn_relu": 1, "lstm": 4, "gru": 3}


def _features(ctx: InferContext) -> tuple[int, int]:
    """(features per step, steps) of the input."""
    shape = ctx.input("in")
    need_ndim("BiRNN", ctx, shape, (2, 3), "a BiRNN reads a sequence: use (C, L), or (C, H, W) read along W")
    return numel(shape[:-1]), shape[-1]


def _infer(ctx: InferContext) -> dict[str, ShapeT]:
    _, steps = _features(ctx)
    return {"out": (2 * ctx.params["hidden_size"], steps)}


def _count(ctx: InferContext) -> int:
    features, _ = _features(ctx)
    p = ctx.params
    hidden, gates = p["hidden_size"], GATES[p["cell"]]
    total = 0
    for layer in range(p["num_layers"]):
        size_in = features if layer == 0 else 2 * hidden
        per_direction = gates * hidden * (size_in + hidden) + (2 * gates * hidden if p["bias"] else 0)
        total += 2 * per_direction
    return total


def _recipe(ctx: BuildContext) -> ModuleRecipe:
    p = ctx.params
    return recipe("layers", "BiRNN", input_size=numel(ctx.in_shapes[0][:-1]), hidden_size=p["hidden_size"],
                  cell=p["cell"], num_layers=p["num_layers"], bias=p["bias"], init=p["init"], node=ctx.node_id)


def reading(shape: ShapeT | None) -> str | None:
    """How a BiRNN reads an input of ``shape`` (no batch axis), in words the inspector shows:
    ``64 steps of 8 features (time is the last axis)``; None for a shape it cannot read. A
    sequence drawn as (time, features) reads its features as time: the words make that visible."""
    if shape is None or len(shape) not in (2, 3) or not all(isinstance(s, int) for s in shape):
        return None
    per_step = "x".join(map(str, shape[:-1]))
    features = numel(tuple(shape[:-1]))
    return (f"{shape[-1]} steps of {features} features" + (f" ({per_step} a step)" if len(shape) == 3 else "")
            + " (time is the last axis)")


BIRNN = NodeSpec(
    type_id="BiRNN", category="Recurrent",
    shape_rule="reads (features, time): time is the last axis, and (C, H, W) is W steps of C*H features; "
               "it gives (2*hidden_size, steps). Data stored as (time, features): put a Permute of kind axes "
               "(dims [1, 0]) before it, or transpose the data (numpy.transpose(x, (0, 2, 1))); a Reshape "
               "would mix the values",
    memory_note="keeps its input, every step's hidden states (and an LSTM's or GRU's gates) of both "
                "directions and layers: about the output's size times the gate count per layer.",
    examples=(({"hidden_size": 32, "cell": "lstm"}, ((8, 64),)),),
    help="A bidirectional RNN, LSTM or GRU reading the last axis as time, forwards and backwards. "
         "(C, L) gives (2*hidden_size, L); (C, H, W) is read along W and gives (2*hidden_size, W).",
    params={
        "hidden_size": Int(default=32, min=1, help="Features per direction; the output has twice as many."),
        "cell": Choice(default="lstm", options=("rnn_tanh", "rnn_relu", "lstm", "gru"),
                       help="Recurrent cell: a plain RNN (tanh or relu), an LSTM or a GRU."),
        "num_layers": Int(default=1, min=1, max=16, help="Stacked recurrent layers."),
        "bias": Bool(default=True, help="Learn bias terms in the cell."),
        "init": init_param(),
    },
    inputs=("in",), outputs=("out",),
    infer=_infer, count_params=_count, build=builder("BiRNN", _recipe),
    fresh_output=True,
    key_params=("hidden_size", "cell"),
    reading=reading,
)

SPECS = (BIRNN,)
