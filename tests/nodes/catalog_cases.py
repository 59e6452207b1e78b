"""Tiny example nodes of every catalog type, and the mistakes each should reject.

``CASES[type_id]`` lists (params, input shapes) on shapes small enough for
float64 gradchecks; a test fails if a registered type has none, so a new type
cannot skip the catalog tests. Group bodies come from ``make_groups``.
"""
from __future__ import annotations

from typing import Any

from catalog_kit import chain

from revstudio.core.graph import Graph

Case = tuple[dict[str, Any], list[tuple[int, ...]]]


def two_port_body() -> Graph:
    """Inputs a, b -> outputs sum = a + b and prod = a * b."""
    body = Graph("two")
    body.add_node("GroupInput", "a", {"port": "a"})
    body.add_node("GroupInput", "b", {"port": "b"})
    body.add_node("Merge", "add", {"mode": "add"})
    body.add_node("Merge", "mul", {"mode": "mul"})
    body.add_node("GroupOutput", "sum", {"port": "sum"})
    body.add_node("GroupOutput", "prod", {"port": "prod"})
    for src, dst in (("a.out", "add.in0"), ("b.out", "add.in1"), ("a.out", "mul.in0"), ("b.out", "mul.in1"),
                     ("add.out", "sum.in"), ("mul.out", "prod.in")):
        body.connect(src, dst)
    return body


def fan_body() -> Graph:
    """One input copied to two outputs."""
    body = Graph("fan")
    body.add_node("GroupInput", "a", {"port": "in"})
    body.add_node("GroupOutput", "o0", {"port": "out0"})
    body.add_node("GroupOutput", "o1", {"port": "out1"})
    body.connect("a.out", "o0.in")
    body.connect("a.out", "o1.in")
    return body


def make_groups() -> dict[str, Graph]:
    conv2 = ("Conv", {"out_channels": 2, "kernel_size": 3})
    return {
        # F/G of an additive coupling on 4 channels: 2 -> 2 channels
        "f": chain(conv2, ("Activation", {"fn": "tanh"})),
        "g": chain(("Conv", {"out_channels": 2, "kernel_size": 1})),
        "f_zero": chain(("Conv", {"out_channels": 2, "kernel_size": 3, "init": "zeros"})),
        # split 1 of 3 channels: F maps 2 channels to 1, G maps 1 to 2
        "f21": chain(("Conv", {"out_channels": 1, "kernel_size": 1})),
        "g12": chain(("Conv", {"out_channels": 2, "kernel_size": 1})),
        # affine net: x1 (2 channels) -> 2 x (2 channels)
        "net": chain(conv2, ("Activation", {"fn": "tanh"}), ("Conv", {"out_channels": 4, "kernel_size": 1})),
        "net_zero": chain(("Conv", {"out_channels": 4, "kernel_size": 1, "init": "zeros"})),
        # flat features (tabular flows): Linear bodies
        "f_lin": chain(("Linear", {"out_features": 3}), ("Activation", {"fn": "gelu"})),
        "net_lin": chain(("Linear", {"out_features": 6, "init": "xavier_uniform"})),
        "wrong": chain(("Conv", {"out_channels": 3, "kernel_size": 1})),
        "block": chain(("Conv", {"out_channels": 4, "kernel_size": 3}), ("Activation", {"fn": "tanh"})),
        "flow": chain(("ActNorm", {}), ("InvConv1x1", {}), ("AdditiveCoupling", {"f": "f", "g": "g"})),
        "shrink": chain(("Pool", {"kind": "avg"})),
        "two": two_port_body(),
        "fan": fan_body(),
    }


ACTIVATIONS = ("relu", "tanh", "sigmoid", "gelu", "leaky_relu", "elu", "softplus", "identity")

CASES: dict[str, list[Case]] = {
    "Input": [({"shape": [2, 3]}, []), ({"shape": [3, 2, 2], "dtype": "float64"}, [])],
    "Output": [({}, [(3, 2)])],
    "GroupInput": [({"port": "x"}, [(2, 3)])],
    "GroupOutput": [({"port": "y"}, [(3,)])],
    "Conv": [
        ({"out_channels": 3, "kernel_size": 3}, [(2, 5)]),
        ({"out_channels": 4, "kernel_size": 3, "stride": 2, "padding": 1}, [(2, 5, 6)]),
        ({"out_channels": 4, "kernel_size": 2, "dilation": 2, "groups": 2, "padding": 0, "bias": False},
         [(2, 6, 5)]),
        ({"out_channels": 2, "kernel_size": 2, "padding": "same"}, [(3, 4, 3)]),
    ],
    "BiRNN": [({"hidden_size": 2, "cell": cell}, [(3, 4)]) for cell in ("rnn_tanh", "rnn_relu", "lstm", "gru")]
    + [({"hidden_size": 2, "cell": "gru", "num_layers": 2, "bias": False}, [(2, 2, 3)]),
       ({"hidden_size": 1, "cell": "lstm"}, [(1, 2, 4)])],
    "Linear": [({"out_features": 3}, [(2, 2, 2)]), ({"out_features": 2, "bias": False}, [(5,)])],
    "Activation": [({"fn": fn}, [(3, 4)]) for fn in ACTIVATIONS]
    + [({"fn": fn, "inplace": True}, [(2, 3)]) for fn in ("relu", "tanh", "sigmoid", "leaky_relu", "elu")],
    "Norm": [
        ({"kind": "batch"}, [(3,)]), ({"kind": "batch"}, [(3, 4)]), ({"kind": "batch", "affine": False}, [(2, 3, 3)]),
        ({"kind": "layer"}, [(3, 2, 2)]), ({"kind": "group", "groups": 2}, [(4, 3)]),
        ({"kind": "instance"}, [(2, 5)]), ({"kind": "instance"}, [(2, 3, 3)]),
    ],
    "Pool": [
        ({"kind": "max"}, [(2, 4, 4)]), ({"kind": "avg", "kernel_size": 2, "stride": 1, "padding": 1}, [(2, 5)]),
        ({"kind": "max", "kernel_size": 3, "stride": 2, "padding": 1}, [(2, 5)]),
        ({"kind": "global_avg"}, [(3, 2, 3)]), ({"kind": "global_avg"}, [(3, 4)]),
    ],
    "Dropout": [({"p": 0.3}, [(3, 4)])],
    "Flatten": [({}, [(2, 3, 2)])],
    "Reshape": [({"shape": [3, -1]}, [(2, 3, 2)]), ({"shape": [12]}, [(3, 4)])],
    "Split": [
        ({"sections": 2}, [(4, 3)]), ({"sections": [1, 3]}, [(4, 2, 2)]),
        ({"sections": 3, "dim": 1}, [(2, 6)]),
    ],
    "Concat": [({}, [(2, 3), (1, 3)]), ({"inputs": 3, "dim": 1}, [(2, 1, 2), (2, 3, 2), (2, 2, 2)])],
    "Merge": [({"mode": mode}, [(2, 3), (2, 3)]) for mode in ("add", "sub", "mul", "mean", "max", "stack")]
    + [({"mode": mode, "inputs": 3}, [(2, 2), (2, 2), (2, 2)]) for mode in ("sub", "mul", "max", "mean")]
    + [({"mode": mode, "inputs": 4}, [(3,)] * 4) for mode in ("add", "mul", "max")]
    + [({"mode": "concat"}, [(2, 3), (1, 3)])],
    "Permute": [({"kind": "reverse"}, [(4, 3)]), ({"kind": "shuffle", "seed": 3}, [(5, 2, 2)]),
                ({"kind": "axes", "dims": [1, 0]}, [(4, 3)]), ({"kind": "axes", "dims": [2, 0, 1]}, [(2, 3, 4)])],
    "InvConv1x1": [({}, [(3, 2, 2)]), ({"lu": False}, [(3, 4)]), ({}, [(4,)])],
    "ActNorm": [({}, [(3, 2, 2)]), ({}, [(3,)])],
    "Squeeze": [({"factor": 2}, [(2, 4, 4)]), ({"factor": 3}, [(2, 6)])],
    "AdditiveCoupling": [
        ({"f": "f", "g": "g"}, [(4, 3, 3)]), ({"f": "f"}, [(4, 5)]),
        ({"f": "f21", "g": "g12", "split": 1}, [(3, 2)]),
        ({"f": "f_lin", "split": 3}, [(6,)]),
    ],
    "AffineCoupling": [
        ({"net": "net"}, [(4, 3, 3)]), ({"net": "net", "clamp": 0.0}, [(4, 5)]), ({"net": "net_lin"}, [(6,)]),
    ],
    "Group": [({"group": "block"}, [(4, 3, 3)]), ({"group": "two"}, [(2, 3), (2, 3)])],
    "Repeat": [({"group": "block", "times": 2}, [(4, 3, 3)]), ({"group": "flow", "times": 2}, [(4, 2, 2)])],
}

# Bodies that are invertible chains, so Group/Repeat of them can be inverted.
INVERTIBLE_GROUP_CASES: list[tuple[str, Case]] = [
    ("Group", ({"group": "flow"}, [(4, 2, 2)])),
    ("Repeat", ({"group": "flow", "times": 3}, [(4, 3)])),
]


def plugin_cases() -> list[tuple[str, dict[str, Any], list[tuple[int, ...]]]]:
    """The examples that installed plugins declare for their node types (NodeSpec.examples);
    malformed ones are left out (revstudio warns when the plugin loads, and
    test_catalog_specs.py fails, naming them) rather than stop the collection."""
    from revstudio.core.plugins import bad_examples
    from revstudio.core.spec import registry

    out = []
    for spec in registry:
        provider = registry.provider(spec.type_id)
        if provider is not None and not provider.builtin and not bad_examples(spec):
            out += [(spec.type_id, dict(params), [tuple(s) for s in shapes]) for params, shapes in spec.examples]
    return out


def all_cases() -> list[tuple[str, dict[str, Any], list[tuple[int, ...]]]]:
    """Every built-in case, then every installed plugin's examples."""
    return [(t, params, shapes) for t, cases in CASES.items() for params, shapes in cases] + plugin_cases()


def case_id(case: tuple[str, dict[str, Any], list[tuple[int, ...]]]) -> str:
    t, params, shapes = case
    detail = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{t}[{detail}]{'/'.join('x'.join(map(str, s)) for s in shapes)}".replace(" ", "")


# (type, params, input shapes, words the message must contain, port the error names)
ERRORS: list[tuple[str, dict[str, Any], list[tuple[int, ...]], list[str], str | None]] = [
    ("Merge", {"mode": "add"}, [(4, 16, 16), (8, 16, 16)],
     ["Merge n:", "in1 is 8x16x16 but in0 is 4x16x16", "add mode needs equal shapes",
      "give the layer that feeds in1 4 channels (a Conv's out_channels), as in0 has"], "in1"),
    ("Merge", {"mode": "add"}, [(4, 16, 16), (4, 8, 8)],
     ["in1 is 4x8x8", "the layer that feeds in1 makes the size 8x8, not 16x16: check its stride, padding or pooling"],
     "in1"),
    ("Merge", {"mode": "mul"}, [(10,), (12,)],
     ["give the layer that feeds in1 10 features (a Linear's out_features), as in0 has"], "in1"),
    ("Merge", {"mode": "max"}, [(4, 16), (4, 4, 4)], ["make the layer that feeds in1 give 4x16"], "in1"),
    ("Merge", {"mode": "stack", "inputs": 3}, [(2, 3), (2, 3), (2, 4)], ["in2 is 2x4", "stack"], "in2"),
    ("Merge", {"mode": "concat"}, [(2, 3), (2, 4)], ["in1 is 2x4", "concat"], "in1"),
    ("Conv", {"out_channels": 4, "groups": 3}, [(6, 5)], ["groups=3", "input channels (6)", "out_channels (4)"], None),
    ("Conv", {"stride": 2}, [(2, 8)], ["padding 'same'", "stride 1"], None),
    ("Conv", {"kernel_size": 5, "padding": 0}, [(2, 3)], ["too small", "kernel"], "in"),
    ("Conv", {"kernel_size": 3, "dilation": 3, "padding": 1}, [(2, 4, 4)], ["spanning 7"], "in"),
    ("Conv", {}, [(4,)], ["(C, L) or (C, H, W)", "is 4"], "in"),
    ("BiRNN", {}, [(4,)], ["(C, L) or (C, H, W)", "sequence"], "in"),
    ("Split", {"sections": 2}, [(7, 3)], ["cannot split 7", "[3, 4]"], "in"),
    ("Split", {"sections": [2, 3]}, [(4, 3)], ["add up to 5", "add up to 4"], "in"),
    ("Split", {"dim": 2}, [(4, 3)], ["dim 2 does not exist"], "in"),
    ("Concat", {}, [(2, 3), (2, 4, 1)], ["in1 is 2x4x1 but in0 is 2x3"], "in1"),
    ("Concat", {"dim": 1}, [(2, 3), (3, 4)], ["in1 is 3x4", "dim 1"], "in1"),
    ("Reshape", {"shape": [5, -1]}, [(2, 3)], ["6 values", "not divisible by 5"], "in"),
    ("Reshape", {"shape": [4, 2]}, [(2, 3)], ["(8 values)", "multiply to 6"], "in"),
    ("Reshape", {"shape": [1]}, [(2, 3)], ["(1 value)", "multiply to 6"], "in"),
    ("Reshape", {"shape": [-1, -1]}, [(2, 3)], ["more than one -1"], None),
    ("Reshape", {"shape": [0, 6]}, [(2, 3)], ["has a 0"], None),
    ("Squeeze", {"factor": 2}, [(2, 3, 4)], ["not divisible by factor 2"], "in"),
    ("Squeeze", {}, [(4,)], ["(C, L) or (C, H, W)"], "in"),
    ("Norm", {"kind": "group", "groups": 3}, [(4, 2)], ["groups=3", "4 input channels"], None),
    ("Norm", {"kind": "instance"}, [(4,)], ["instance norm"], "in"),
    ("Norm", {"kind": "instance"}, [(4, 1, 1)], ["single position"], "in"),
    # one value per group (or per layer) normalises to a constant; torch refuses it at batch size 1
    ("Norm", {"kind": "group", "groups": 3}, [(3,)], ["group norm of 3", "groups=3", "single value",
                                                      "fewer groups"], None),
    ("Norm", {"kind": "group", "groups": 4}, [(4, 1)], ["group norm of 4x1", "single value"], None),
    ("Norm", {"kind": "layer"}, [(1,)], ["layer norm of 1", "single value", "kind batch"], "in"),
    ("Pool", {"kernel_size": 3}, [(2, 2, 2)], ["smaller than the 3-wide window"], "in"),
    ("Pool", {"kernel_size": 2, "padding": 2}, [(2, 8)], ["padding 2", "half of kernel_size 2"], None),
    ("Pool", {"kind": "global_avg"}, [(5,)], ["global"], "in"),
    ("Activation", {"fn": "gelu", "inplace": True}, [(2, 3)], ["inplace", "no in-place gelu"], None),
    ("AdditiveCoupling", {"f": "f", "split": 4}, [(4, 2)], ["split 4 leaves no channels", "1..3"], None),
    ("AdditiveCoupling", {"f": "f"}, [(1, 2)], ["single channel"], "in"),
    # a flow on 1-channel images (digits, MNIST): the way out keeps it invertible, a Conv would not
    ("AffineCoupling", {"net": "net"}, [(1, 8, 8)], ["single channel", "add a Squeeze before it",
                                                     "a Conv instead leaves no flow"], "in"),
    ("AffineCoupling", {"net": "net"}, [(1,)], ["single value", "nothing to split", "at least 2 values"], "in"),
    ("AdditiveCoupling", {"f": "nope"}, [(4, 2)], ["f: there is no group 'nope'", "create it"], None),
    ("AdditiveCoupling", {}, [(4, 2)], ["f: no group is chosen", "pick one", "grouping nodes"], None),
    ("AffineCoupling", {}, [(4, 2)], ["net: no group is chosen"], None),
    ("Repeat", {}, [(4, 2)], ["group: no group is chosen"], None),
    ("AdditiveCoupling", {"f": "wrong"}, [(4, 2)],
     ["group 'wrong' maps x2 (2x2) to 3x2", "y1 = x1 + F(x2) needs 2x2", "output 2 channels"], None),
    ("AdditiveCoupling", {"f": "f", "g": "wrong"}, [(4, 2)], ["g: group 'wrong' maps y1", "needs 2x2"], None),
    ("AdditiveCoupling", {"f": "two"}, [(4, 2)], ["exactly one GroupInput", "2 and 2"], None),
    ("AdditiveCoupling", {"f": "block"}, [(2,)],
     ["f: group 'block' does not work on in 1:", "Conv n0: needs a (C, L) or (C, H, W)"], None),
    ("AffineCoupling", {"net": "f"}, [(4, 2)], ["net: group 'f' maps x1 (2x2) to 2x2", "needs 4x2"], None),
    ("Repeat", {"group": "shrink"}, [(2, 4)], ["turns in (2x4) into out 2x2", "keep the shape"], "in"),
    ("Repeat", {"group": "fan"}, [(2, 3)], ["1 inputs but 2 outputs"], None),
    ("Group", {"group": "missing"}, [], ["no group 'missing'"], None),
    ("GroupInput", {"port": "a b"}, [(2,)], ["'a b' is not a usable port name"], None),
    ("GroupOutput", {"port": "x.y"}, [(2,)], ["'x.y' is not a usable port name"], None),
]
