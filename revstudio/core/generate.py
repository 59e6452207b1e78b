"""Project graphs built by code: RevNet chains, large graphs and random valid graphs.

Benchmarks, tests and the example projects use these instead of hand-written
JSON. They are torch-free and only name catalog types and params, so what they
produce is exactly what a user could draw. Positions are laid out left to right.
"""
from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from typing import Any

from .graph import Edge, Graph, PortRef

# Canvas nodes are 164 wide and up to ~140 tall: leave room for wires and their shape labels.
COLUMN = 240.0  # horizontal distance between layers on the canvas
ROW = 170.0     # vertical distance between nodes of one layer


class Builder:
    """A graph under construction: ``node`` adds and returns its id, ``wire`` connects."""

    def __init__(self, name: str) -> None:
        self.graph = Graph(name)
        self.rows: dict[str, int] = {}  # preferred canvas row of some nodes (layout hints)

    def node(self, type_id: str, node_id: str, *, row: int | None = None, **params: Any) -> str:
        self.graph.add_node(type_id, node_id, params)
        if row is not None:
            self.rows[node_id] = row
        return node_id

    def wire(self, src: str, dst: str) -> None:
        """``wire("a", "b.in0")``; a bare id means its ``out``/``in`` port."""
        # add_edge, not connect: generators never repeat an edge, and connect's
        # duplicate scan would make building a 10,000-node graph quadratic.
        s = PortRef.parse(src if "." in src else f"{src}.out")
        d = PortRef.parse(dst if "." in dst else f"{dst}.in")
        self.graph.add_edge(Edge(s, d))

    def chain(self, src: str, *node_ids: str) -> str:
        """Wire ``src -> n1 -> n2 ...`` through single ports; returns the last id's output."""
        for nid in node_ids:
            self.wire(src, nid)
            src = f"{nid}.out"
        return src

    def done(self, band_of: Callable[[str], int] | None = None) -> Graph:
        layout(self.graph, band_of, self.rows.get)
        return self.graph


def layout(graph: Graph, band_of: Callable[[str], int] | None = None,
           row_of: Callable[[str], int | None] | None = None,
           origin: tuple[float, float] = (0.0, 0.0)) -> None:
    """Place nodes in columns by longest path from the inputs.

    Within a column nodes take the first free row in file order, or the row
    ``row_of`` prefers (e.g. a coupling's F below its main stream, so skip wires
    stay visible); ``band_of`` stacks independent parts (the lanes of a wide
    model) in horizontal bands of their own.
    """
    depth: dict[str, int] = dict.fromkeys(graph.nodes, 0)
    preds: dict[str, list[str]] = {}
    for e in graph.edges:
        preds.setdefault(e.dst.node, []).append(e.src.node)
    # Generators add nodes in a topological order, so one pass settles depths.
    for nid in graph.nodes:
        for p in preds.get(nid, ()):
            depth[nid] = max(depth[nid], depth.get(p, 0) + 1)
    taken: set[tuple[int, int, int]] = set()
    slot: dict[str, tuple[int, int]] = {}
    height: dict[int, int] = {}
    for nid in graph.nodes:
        band, col = (band_of(nid) if band_of else 0), depth[nid]
        row = (row_of(nid) if row_of else None) or 0
        while (band, col, row) in taken:
            row += 1
        taken.add((band, col, row))
        slot[nid] = (band, row)
        height[band] = max(height.get(band, 0), row + 1)
    top, offset = 0.0, {}
    for band in sorted(height):
        offset[band] = top
        top += (height[band] + 1) * ROW
    for nid, node in graph.nodes.items():
        band, row = slot[nid]
        node.pos = (origin[0] + depth[nid] * COLUMN, origin[1] + offset[band] + row * ROW)
    for body in graph.groups.values():
        layout(body)


# ---- RevNet blocks -------------------------------------------------------

def _conv_act_conv(b: Builder, src: str, prefix: str, channels: int, row: int | None = None) -> str:
    """F or G of a RevNet block: Conv3x3 -> ReLU -> Conv3x3, keeping ``channels``."""
    b.node("Conv", f"{prefix}_conv1", out_channels=channels, kernel_size=3, padding="same", row=row)
    b.node("Activation", f"{prefix}_relu", fn="relu", row=row)
    b.node("Conv", f"{prefix}_conv2", out_channels=channels, kernel_size=3, padding="same", row=row)
    return b.chain(src, f"{prefix}_conv1", f"{prefix}_relu", f"{prefix}_conv2")


def wired_block(b: Builder, src: str, name: str, channels: int,
                body: Callable[[Builder, str, str, int], str] | None = None) -> str:
    """One RevNet block drawn by hand: y1 = x1 + F(x2); y2 = x2 + G(y1); concat(y1, y2).
    ``body(b, src, prefix, channels)`` draws F and G (default: Conv3x3 -> ReLU -> Conv3x3)."""
    half = channels // 2
    split = b.node("Split", f"{name}_split", sections=2)
    b.wire(src, split)
    # Main stream on row 0, F and G below it, the second merge below them: the
    # skip wires then run through empty cells instead of behind nodes.
    make = body or (lambda bb, s, prefix, c: _conv_act_conv(bb, s, prefix, c, row=1))
    f_out = make(b, f"{split}.out1", f"{name}_f", half)
    merge1 = b.node("Merge", f"{name}_add1", mode="add")
    b.wire(f"{split}.out0", f"{merge1}.in0")
    b.wire(f_out, f"{merge1}.in1")
    g_out = make(b, f"{merge1}.out", f"{name}_g", half)
    merge2 = b.node("Merge", f"{name}_add2", mode="add", row=2)
    b.wire(f"{split}.out1", f"{merge2}.in0")
    b.wire(g_out, f"{merge2}.in1")
    cat = b.node("Concat", f"{name}_cat")
    b.wire(f"{merge1}.out", f"{cat}.in0")
    b.wire(f"{merge2}.out", f"{cat}.in1")
    return f"{cat}.out"


def _body(name: str, make: Callable[[Builder, str], str]) -> Graph:
    """A group body: GroupInput -> make(...) -> GroupOutput."""
    b = Builder(name)
    b.node("GroupInput", "in", port="in")
    out = make(b, "in.out")
    b.node("GroupOutput", "out", port="out")
    b.wire(out, "out.in")
    return b.done()


def add_coupling_groups(graph: Graph, channels: int, f: str = "f", g: str = "g") -> None:
    """Groups ``f`` and ``g`` (Conv3x3 -> ReLU -> Conv3x3 on half the channels) and ``block``."""
    half = channels // 2
    graph.groups[f] = _body(f, lambda b, s: _conv_act_conv(b, s, "f", half))
    graph.groups[g] = _body(g, lambda b, s: _conv_act_conv(b, s, "g", half))

    def block(b: Builder, src: str) -> str:
        b.node("AdditiveCoupling", "coupling", f=f, g=g)
        return b.chain(src, "coupling")

    graph.groups["block"] = _body("block", block)


def classifier_head(b: Builder, src: str, classes: int = 10, prefix: str = "") -> str:
    """Global average pool -> Linear -> Output."""
    b.node("Pool", f"{prefix}pool", kind="global_avg")
    b.node("Linear", f"{prefix}head", out_features=classes)
    b.node("Output", f"{prefix}logits", name=f"{prefix}logits")
    return b.chain(src, f"{prefix}pool", f"{prefix}head", f"{prefix}logits")


def flat_classifier(shape: Sequence[int], classes: int = 10, name: str = "classifier") -> Graph:
    """Input ``x`` (``shape``) -> Flatten ``flat`` -> Linear ``fc`` (``classes``) -> Output ``y``: the
    smallest classifier of samples of any shape, for runs whose point is the data they read."""
    b = Builder(name)
    b.node("Input", "x", shape=list(shape))
    b.node("Flatten", "flat")
    b.node("Linear", "fc", out_features=classes)
    b.node("Output", "y")
    b.chain("x.out", "flat", "fc", "y")
    return b.done()


def sequence_classifier(features: int, steps: int, classes: int = 3, cell: str = "gru", hidden: int = 3,
                        name: str = "seq") -> Graph:
    """Input ``x`` (``features`` x ``steps``: time is the last axis) -> BiRNN ``rnn`` (``cell``,
    ``hidden``) -> global-average Pool ``pool`` -> Linear ``fc`` (``classes``) -> Output ``y``: the
    smallest sequence classifier, for runs whose point is the sequences they read."""
    b = Builder(name)
    b.node("Input", "x", shape=[features, steps])
    b.node("BiRNN", "rnn", cell=cell, hidden_size=hidden)
    b.node("Pool", "pool", kind="global_avg")
    b.node("Linear", "fc", out_features=classes)
    b.node("Output", "y")
    b.chain("x.out", "rnn", "pool", "fc", "y")
    return b.done()


def sequence_tagger(features: int, steps: int, classes: int = 3, cell: str = "gru", hidden: int = 3,
                    name: str = "tagger") -> Graph:
    """Input ``x`` (``features`` x ``steps``) -> BiRNN ``rnn`` (``cell``, ``hidden``) -> Conv ``head``
    (kernel 1, ``classes`` channels) -> Output ``tags`` (``classes`` x ``steps``, channels first): a class
    per step (sequence tagging), trained on N x ``steps`` labels."""
    b = Builder(name)
    b.node("Input", "x", shape=[features, steps])
    b.node("BiRNN", "rnn", cell=cell, hidden_size=hidden)
    b.node("Conv", "head", out_channels=classes, kernel_size=1)
    b.node("Output", "tags")
    b.chain("x.out", "rnn", "head", "tags")
    return b.done()


def segmenter(channels: int, height: int, width: int, classes: int = 3, hidden: int = 8,
              name: str = "segmenter") -> Graph:
    """Input ``x`` (``channels`` x ``height`` x ``width``) -> Conv3x3 ``conv1`` (``hidden``, same padding)
    -> ReLU ``relu`` -> Conv3x3 ``conv2`` -> ReLU ``relu2`` -> Conv ``head`` (kernel 1, ``classes`` channels)
    -> Output ``seg`` (``classes`` x ``height`` x ``width``, channels first): a class per pixel
    (segmentation), trained on N x ``height`` x ``width`` labels."""
    b = Builder(name)
    b.node("Input", "x", shape=[channels, height, width])
    b.node("Conv", "conv1", out_channels=hidden, kernel_size=3, padding="same")
    b.node("Activation", "relu", fn="relu")
    b.node("Conv", "conv2", out_channels=hidden, kernel_size=3, padding="same")
    b.node("Activation", "relu2", fn="relu")
    b.node("Conv", "head", out_channels=classes, kernel_size=1)
    b.node("Output", "seg")
    b.chain("x.out", "conv1", "relu", "conv2", "relu2", "head", "seg")
    return b.done()


def volume_segmenter(depth: int, height: int, width: int, classes: int = 2, hidden: int = 8,
                     name: str = "volume-segmenter") -> Graph:
    """Input ``x`` (``depth`` slices x ``height`` x ``width``, the slices read as channels) -> Conv3x3
    ``conv1`` (``hidden``, same padding) -> ReLU ``relu`` -> Conv ``head`` (kernel 1, ``classes`` x
    ``depth`` channels) -> Reshape ``scores`` -> Output ``seg`` (``classes`` x ``depth`` x ``height`` x
    ``width``, channels first): a class per voxel, trained on N x ``depth`` x ``height`` x ``width`` labels."""
    b = Builder(name)
    b.node("Input", "x", shape=[depth, height, width])
    b.node("Conv", "conv1", out_channels=hidden, kernel_size=3, padding="same")
    b.node("Activation", "relu", fn="relu")
    b.node("Conv", "head", out_channels=classes * depth, kernel_size=1)
    b.node("Reshape", "scores", shape=[classes, depth, height, width])
    b.node("Output", "seg")
    b.chain("x.out", "conv1", "relu", "head", "scores", "seg")
    return b.done()


def revnet_chain(blocks: int, channels: int = 16, size: int = 16, wired: bool = True,
                 classes: int | None = 10, flatten: bool = False) -> Graph:
    """Input (channels x size x size) -> ``blocks`` RevNet blocks -> pool -> Linear -> Output.

    ``wired=True`` draws each block from Split/Conv/Activation/Merge/Concat nodes;
    ``wired=False`` uses one Repeat of an AdditiveCoupling block with f/g groups.
    Both have the same parameters. ``flatten``: a Reshape to (channels, size * size)
    after the blocks (the region's last step), before the pool. ``classes=None``: no
    classifier head, the blocks' result is the Output ``y`` (the region's output is the
    model's own, as in the benchmarks' RevNet).
    """
    if channels < 2 or channels % 2:
        raise ValueError(f"channels must be even and >= 2, got {channels}")
    b = Builder(f"revnet-{blocks}" + ("-wired" if wired else "-coupling"))
    src = b.node("Input", "x", shape=[channels, size, size])
    src = f"{src}.out"
    if wired:
        for i in range(blocks):
            src = wired_block(b, src, f"b{i}", channels)
    else:
        add_coupling_groups(b.graph, channels)
        b.node("Repeat", "blocks", group="block", times=blocks)
        src = b.chain(src, "blocks")
    if flatten:
        b.node("Reshape", "flat", shape=[channels, size * size])
        src = b.chain(src, "flat")
    if classes is None:
        b.node("Output", "y")
        b.wire(src, "y")
    else:
        classifier_head(b, src, classes)
    return b.done()


def large_graph(n_nodes: int, channels: int = 8, size: int = 8) -> Graph:
    """A valid graph of about ``n_nodes`` nodes: parallel lanes of wired RevNet blocks.

    One Input fans out to lanes of ~500 nodes; each lane ends in its own
    classifier head, like a wide multi-head model.
    """
    per_block, per_head = 10, 3
    lanes = max(1, round(n_nodes / 500))
    blocks = max(1, round(((n_nodes - 1) / lanes - per_head) / per_block))
    b = Builder(f"large-{n_nodes}")
    b.node("Input", "x", shape=[channels, size, size])
    for lane in range(lanes):
        src = "x.out"
        for i in range(blocks):
            src = wired_block(b, src, f"l{lane}b{i}", channels)
        classifier_head(b, src, prefix=f"l{lane}_")
    def lane_of(nid: str) -> int:
        return int(nid[1:].split("b")[0].split("_")[0]) if nid != "x" else 0

    return b.done(lane_of)


# ---- random valid graphs -----------------------------------------------------

def _unary_ops(rng: random.Random, shape: Sequence[int]) -> list[tuple[str, dict[str, Any]]]:
    """Candidate single-input nodes for a value of ``shape`` (the check has the last word)."""
    c, nd = shape[0], len(shape)
    ops: list[tuple[str, dict[str, Any]]] = [
        ("Activation", {"fn": rng.choice(["relu", "tanh", "gelu", "leaky_relu", "identity"])}),
        ("Dropout", {"p": 0.1}),
        ("Permute", {"kind": rng.choice(["reverse", "shuffle"]), "seed": rng.randrange(100)}),
        ("Linear", {"out_features": rng.choice([3, 6])}),
        ("Flatten", {}),
    ]
    if nd >= 2:
        ops += [
            ("Conv", {"out_channels": rng.choice([2, 4, 6]), "kernel_size": rng.choice([1, 3]),
                      "padding": "same"}),
            ("BiRNN", {"hidden_size": rng.choice([2, 3]), "cell": rng.choice(["lstm", "gru", "rnn_tanh"])}),
            ("Norm", {"kind": rng.choice(["batch", "layer", "instance"])}),
            ("ActNorm", {}),
            ("InvConv1x1", {"lu": rng.random() < 0.5}),
        ]
        if all(d % 2 == 0 for d in shape[1:]):
            ops.append(("Pool", {"kind": rng.choice(["max", "avg"]), "kernel_size": 2}))
    if nd == 3 and shape[1] % 2 == 0 and shape[2] % 2 == 0:
        ops.append(("Squeeze", {"factor": 2}))
    if c % 2 == 0 and c >= 2:
        ops.append(("Split", {"sections": 2}))
        if nd >= 2:
            ops.append(("AdditiveCoupling", {}))
    return ops


def _half_body(b: Builder, src: str, half: int) -> str:
    return _conv_act_conv(b, src, "f", half)


def random_graph(seed: int, max_nodes: int = 30) -> Graph:
    """A random, valid DAG of catalog nodes (at most ``max_nodes``), for property tests.

    Each candidate node is kept only if the checker accepts it, so validity
    comes from the real shape rules, not from a copy of them here.
    """
    from .check import check

    rng = random.Random(seed)
    b = Builder(f"random-{seed}")
    g = b.graph
    shape = [rng.choice([2, 4, 6])] + [rng.choice([4, 8]) for _ in range(rng.choice([1, 2]))]
    b.node("Input", "x", shape=shape)
    shapes: dict[str, tuple[int, ...]] = {"x.out": tuple(shape)}
    unused: list[str] = ["x.out"]
    count = 0

    def pick() -> str:
        pool = unused if unused and rng.random() < 0.8 else list(shapes)
        return rng.choice(pool)

    # Room for the worst step (a Split: one node, two new open ends) plus an Output per open end.
    while len(g) + len(unused) + 3 <= max_nodes:
        count += 1
        if count > 10 * max_nodes:
            break
        nid = f"n{count}"
        if rng.random() < 0.2 and len(shapes) > 1:
            a, c = pick(), pick()
            if a == c or shapes[a] != shapes[c]:
                continue
            if rng.random() < 0.5:
                b.node("Merge", nid, mode=rng.choice(["add", "mul", "max", "mean", "stack"]))
            else:
                b.node("Concat", nid)
            sources = [(a, f"{nid}.in0"), (c, f"{nid}.in1")]
        else:
            a = pick()
            type_id, params = rng.choice(_unary_ops(rng, shapes[a]))
            if type_id == "AdditiveCoupling":
                half = shapes[a][0] // 2
                name = f"f{count}"
                g.groups[name] = _body(name, functools.partial(_half_body, half=half))
                params = {"f": name}
            b.node(type_id, nid, **params)
            sources = [(a, f"{nid}.in")]
        for src, dst in sources:
            g.connect(src, dst)
        report = check(g)
        if not report.nodes[nid].ok or not report.valid:
            g.remove_node(nid)
            g.groups.pop(f"f{count}", None)
            continue
        for src, _ in sources:
            if src in unused:
                unused.remove(src)
        for port, out in report.nodes[nid].outputs.items():
            shapes[f"{nid}.{port}"] = out
            unused.append(f"{nid}.{port}")
    for i, src in enumerate(unused):
        b.node("Output", f"y{i}")
        g.connect(src, f"y{i}.in")
    return b.done()


def glow_repeat(times: int, size: int = 8) -> Graph:
    """A Glow-style flow whose step (ActNorm -> InvConv1x1 -> AffineCoupling) is a Repeat of a group."""
    b = Builder("glow-repeat")
    b.node("Input", "image", shape=[3, size, size])
    b.node("Squeeze", "squeeze", factor=2)

    def net(bb: Builder, s: str) -> str:
        bb.node("Conv", "hidden", out_channels=8, kernel_size=3, padding="same")
        bb.node("Activation", "relu", fn="relu")
        # zero-initialised, so each coupling starts as the identity (Glow, RealNVP): with the default
        # init 64 copies multiplied the input by up to exp(2) each and training diverged at step 2
        bb.node("Conv", "scale_shift", out_channels=12, kernel_size=3, padding="same", init="zeros")
        return bb.chain(s, "hidden", "relu", "scale_shift")

    def step(bb: Builder, s: str) -> str:
        bb.node("ActNorm", "actnorm")
        bb.node("InvConv1x1", "invconv", lu=True)
        bb.node("AffineCoupling", "coupling", net="net", clamp=2.0)
        return bb.chain(s, "actnorm", "invconv", "coupling")

    b.graph.groups["net"] = _body("net", net)
    b.graph.groups["step"] = _body("step", step)
    b.node("Repeat", "flow", group="step", times=times)
    b.node("Output", "z", name="z")
    b.chain("image.out", "squeeze", "flow", "z")
    return b.done()
