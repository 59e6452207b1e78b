"""Random reversible networks of the kinds people draw, for probing the memory estimate.

``random_revnet(seed)``: an image classifier with a Conv stem (sometimes BatchNorm and ReLU),
one or two stages (the second after a 2x2 average pool or a Squeeze) of one to three blocks,
and a pooled Linear head (sometimes after a Dropout). A block is one of: a wired coupling
(Split, F, Merge, G, Merge, Concat), an AdditiveCoupling node with F and G groups, an
AffineCoupling (after ActNorm and InvConv1x1 for a Glow step), or a Group or Repeat (x2, x3) of a
wired or AdditiveCoupling block. F and G are Conv -> [Norm] -> Activation -> [Dropout] -> Conv
chains, drawn per body. ``random_skipnet(seed)``: the same network with a residual skip Merge.
Deterministic per seed; torch-free.
"""
from __future__ import annotations

import random

from revstudio.core.generate import Builder, _body, wired_block
from revstudio.core.graph import Graph


def _chain(rng: random.Random, b: Builder, src: str, prefix: str, channels: int) -> str:
    """F or G: Conv3x3 -> [Norm] -> [Activation] -> [Dropout] -> Conv3x3 on ``channels``."""
    kind = rng.choice(["conv-act-conv", "conv-norm-act-conv", "conv-act-drop-conv", "conv-conv"])
    ids: list[str] = []

    def add(type_id: str, **params: object) -> None:
        ids.append(b.node(type_id, f"{prefix}_{len(ids)}", **params))

    add("Conv", out_channels=channels, kernel_size=3, padding="same")
    if "norm" in kind:
        add("Norm", kind=rng.choice(["batch", "instance"]))
    if "act" in kind:
        add("Activation", fn=rng.choice(["relu", "gelu", "tanh", "leaky_relu"]))
    if "drop" in kind:
        add("Dropout", p=0.1)
    add("Conv", out_channels=channels, kernel_size=3, padding="same")
    return b.chain(src, *ids)


def _wired(rng: random.Random, b: Builder, src: str, name: str, channels: int) -> str:
    return wired_block(b, src, name, channels, lambda bb, s, prefix, c: _chain(rng, bb, s, prefix, c))


def _coupling_bodies(rng: random.Random, graph: Graph, n: int, half: int) -> tuple[str, str]:
    f, g = f"f{n}", f"g{n}"
    graph.groups[f] = _body(f, lambda b, s: _chain(rng, b, s, f, half))
    graph.groups[g] = _body(g, lambda b, s: _chain(rng, b, s, g, half))
    return f, g


def _affine_net(b: Builder, src: str, name: str, channels: int) -> str:
    """An AffineCoupling's net: Conv -> ReLU -> zero-initialised Conv to a scale and a shift."""
    return b.chain(src, b.node("Conv", f"{name}_hidden", out_channels=8, kernel_size=3, padding="same"),
                   b.node("Activation", f"{name}_relu", fn="relu"),
                   b.node("Conv", f"{name}_out", out_channels=2 * (channels - channels // 2), kernel_size=3,
                          padding="same", init="zeros"))


def _block(rng: random.Random, b: Builder, src: str, n: int, channels: int) -> str:
    graph = b.graph
    kind = rng.choice(["wired", "additive", "affine", "glow", "repeat", "group"])
    if kind == "wired":
        return _wired(rng, b, src, f"w{n}", channels)
    if kind == "additive":
        f, g = _coupling_bodies(rng, graph, n, channels // 2)
        return b.chain(src, b.node("AdditiveCoupling", f"c{n}", f=f, g=g))
    if kind in ("affine", "glow"):
        net = f"net{n}"
        graph.groups[net] = _body(net, lambda bb, s: _affine_net(bb, s, net, channels))
        ids = [b.node("ActNorm", f"an{n}"), b.node("InvConv1x1", f"ic{n}", lu=rng.random() < 0.5)] if kind == "glow" else []
        return b.chain(src, *ids, b.node("AffineCoupling", f"ac{n}", net=net, clamp=2.0))
    body = f"blk{n}"
    if rng.random() < 0.5:
        graph.groups[body] = _body(body, lambda bb, s: _wired(rng, bb, s, body, channels))
    else:
        f, g = _coupling_bodies(rng, graph, n, channels // 2)
        graph.groups[body] = _body(body, lambda bb, s: bb.chain(s, bb.node("AdditiveCoupling", "c", f=f, g=g)))
    if kind == "repeat":
        return b.chain(src, b.node("Repeat", f"r{n}", group=body, times=rng.choice([2, 3])))
    return b.chain(src, b.node("Group", f"gr{n}", group=body))


def random_revnet(seed: int) -> Graph:
    rng = random.Random(seed)
    b = Builder(f"random-revnet-{seed}")
    b.node("Input", "x", shape=[rng.choice([1, 3]), *[rng.choice([8, 16])] * 2])
    channels = rng.choice([4, 8, 16])
    src = b.chain("x.out", b.node("Conv", "stem", out_channels=channels, kernel_size=3, padding="same"))
    if rng.random() < 0.5:
        src = b.chain(src, b.node("Norm", "stem_norm", kind="batch"), b.node("Activation", "stem_act", fn="relu"))
    n = 0
    for stage in range(rng.choice([1, 2])):
        if stage and rng.random() < 0.5:
            src = b.chain(src, b.node("Pool", f"down{stage}", kind="avg", kernel_size=2))
        elif stage:
            src = b.chain(src, b.node("Squeeze", f"down{stage}", factor=2))
            channels *= 4
        for _ in range(rng.choice([1, 2, 3])):
            n += 1
            src = _block(rng, b, src, n, channels)
    head = [b.node("Pool", "pool", kind="global_avg")]
    if rng.random() < 0.3:
        head.append(b.node("Dropout", "drop", p=0.2))
    b.chain(src, *head, b.node("Linear", "head", out_features=10), b.node("Output", "logits"))
    return b.done()


# ---- sequence networks ---------------------------------------------------------------------

def _seq_chain(rng: random.Random, b: Builder, src: str, prefix: str, channels: int) -> str:
    """F or G of a sequence block, ``channels`` in and out: a BiRNN (its output, twice its hidden
    size, is ``channels``; ``channels`` is even), a BiRNN then a Conv, or a Conv chain."""
    kind = rng.choice(["birnn", "birnn-conv", "conv-act-conv", "conv-norm-act-conv"])
    ids: list[str] = []

    def add(type_id: str, **params: object) -> None:
        ids.append(b.node(type_id, f"{prefix}_{len(ids)}", **params))

    if kind.startswith("birnn"):
        add("BiRNN", hidden_size=channels // 2, cell=rng.choice(["lstm", "gru", "rnn_tanh"]))
        if kind == "birnn-conv":
            add("Activation", fn=rng.choice(["relu", "tanh"]))
            add("Conv", out_channels=channels, kernel_size=rng.choice([1, 3]), padding="same")
    else:
        add("Conv", out_channels=channels, kernel_size=3, padding="same")
        if "norm" in kind:
            add("Norm", kind=rng.choice(["batch", "layer", "instance"]))
        add("Activation", fn=rng.choice(["relu", "gelu", "tanh"]))
        add("Conv", out_channels=channels, kernel_size=3, padding="same")
    return b.chain(src, *ids)


def _seq_body_maker(rng: random.Random, channels: int, length: int):
    """A builder of one F or G on (channels, length), drawn once per body."""
    linear = rng.random() < 0.15

    def make(b: Builder, src: str, prefix: str, c: int = channels) -> str:
        if linear:  # a Linear reads the flattened sequence; a Reshape gives it its shape back
            return b.chain(src, b.node("Linear", f"{prefix}_0", out_features=c * length),
                           b.node("Activation", f"{prefix}_1", fn="tanh"),
                           b.node("Reshape", f"{prefix}_2", shape=[c, length]))
        return _seq_chain(rng, b, src, prefix, c)
    return make


def _seq_block(rng: random.Random, b: Builder, src: str, n: int, channels: int, length: int) -> str:
    graph = b.graph
    half = channels // 2
    kind = rng.choice(["wired", "additive", "affine", "glow", "repeat", "group"])
    if kind == "wired":
        make = _seq_body_maker(rng, half, length)
        return wired_block(b, src, f"w{n}", channels, lambda bb, s, prefix, c: make(bb, s, prefix, c))
    if kind == "additive":
        f, g = f"f{n}", f"g{n}"
        graph.groups[f] = _body(f, lambda bb, s: _seq_body_maker(rng, half, length)(bb, s, f))
        graph.groups[g] = _body(g, lambda bb, s: _seq_body_maker(rng, half, length)(bb, s, g))
        return b.chain(src, b.node("AdditiveCoupling", f"c{n}", f=f, g=g))
    if kind in ("affine", "glow"):
        net = f"net{n}"
        graph.groups[net] = _body(net, lambda bb, s: bb.chain(
            s, bb.node("Conv", f"{net}_hidden", out_channels=8, kernel_size=3, padding="same"),
            bb.node("Activation", f"{net}_relu", fn="relu"),
            bb.node("Conv", f"{net}_out", out_channels=2 * (channels - half), kernel_size=3, padding="same",
                    init="zeros")))
        ids = []
        if kind == "glow":
            mix = rng.choice(["lu", "plain", "permute"])
            ids = [b.node("ActNorm", f"an{n}"),
                   b.node("Permute", f"pm{n}", kind=rng.choice(["reverse", "shuffle"]), seed=n) if mix == "permute"
                   else b.node("InvConv1x1", f"ic{n}", lu=mix == "lu")]
        return b.chain(src, *ids, b.node("AffineCoupling", f"ac{n}", net=net, clamp=2.0))
    body = f"blk{n}"
    make = _seq_body_maker(rng, half, length)
    graph.groups[body] = _body(body, lambda bb, s: wired_block(bb, s, body, channels,
                                                                lambda b2, s2, prefix, c: make(b2, s2, prefix, c)))
    if kind == "repeat":
        return b.chain(src, b.node("Repeat", f"r{n}", group=body, times=rng.choice([2, 3])))
    return b.chain(src, b.node("Group", f"gr{n}", group=body))


def random_seqnet(seed: int) -> Graph:
    """A sequence classifier: (features, steps) in; a BiRNN or Conv stem to an even number of
    channels; one to three blocks as ``random_revnet`` draws them, with F and G a BiRNN (alone or
    before a Conv), a Conv chain (Norm of any kind) or a Linear over the whole sequence; a head that
    pools over time, flattens or reshapes, then a Linear. Glow steps mix channels with an
    InvConv1x1 (LU or plain) or a fixed Permute."""
    rng = random.Random(seed)
    b = Builder(f"random-seqnet-{seed}")
    length = rng.choice([8, 16, 32])
    b.node("Input", "x", shape=[rng.choice([4, 12, 32]), length])
    channels = rng.choice([8, 12, 16])
    if rng.random() < 0.5:
        stem = b.node("BiRNN", "stem", hidden_size=channels // 2, cell=rng.choice(["lstm", "gru"]))
    else:
        stem = b.node("Conv", "stem", out_channels=channels, kernel_size=3, padding="same")
    src = b.chain("x.out", stem)
    for n in range(1, rng.choice([1, 2, 3]) + 1):
        src = _seq_block(rng, b, src, n, channels, length)
    head = rng.choice(["pool", "flatten", "reshape"])
    if head == "pool":
        ids = [b.node("Pool", "pool", kind="global_avg")]
    elif head == "flatten":
        ids = [b.node("Flatten", "flat")]
    else:
        ids = [b.node("Reshape", "flat", shape=[channels * length // 4, 4])]
    if rng.random() < 0.3:
        ids.append(b.node("Dropout", "drop", p=0.2))
    b.chain(src, *ids, b.node("Linear", "head", out_features=5), b.node("Output", "logits"))
    return b.done()


def random_skipnet(seed: int) -> Graph:
    """``random_revnet(seed)`` with a residual skip: a Merge that adds a value to a later value of
    the same shape (a block's input to its output, or to a later block's, around or into a
    reversible region) and takes the later one's place. The pair is drawn per seed."""
    from revstudio.core.check import check

    graph = random_revnet(seed)
    graph.name = f"random-skipnet-{seed}"
    rng = random.Random(10_007 * seed + 3)
    report = check(graph)
    values = [((nid, port), shape) for nid in report.order if nid in report.nodes
              and report.nodes[nid].type not in ("Input", "Output", "Pool", "Linear", "Dropout")
              for port, shape in report.nodes[nid].outputs.items()]
    pairs = [(a, b) for i, (a, sa) in enumerate(values) for b, sb in values[i + 1:] if sa == sb and a[0] != b[0]]
    if not pairs:
        return graph
    (a, b) = rng.choice(pairs)
    graph.add_node("Merge", "skip", {"mode": "add"})
    for edge in graph.edges_from(b[0], b[1]):
        graph.remove_edge(edge)
        graph.connect("skip.out", str(edge.dst))
    graph.connect(f"{b[0]}.{b[1]}", "skip.in0")
    graph.connect(f"{a[0]}.{a[1]}", "skip.in1")
    return graph


FAMILIES = {"image": random_revnet, "seq": random_seqnet, "skip": random_skipnet}
