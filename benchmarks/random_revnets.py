"""Random reversible networks of the kinds people draw, for probing the memory estimate.

``random_revnet(seed)``: an image classifier with a Conv stem (sometimes BatchNorm and ReLU),
one or two stages (the second after a 2x2 average pool or a Squeeze) of one to three blocks,
and a pooled Linear head (sometimes after a Dropout). A block is one of: a wired coupling
(Split, F, Merge, G, Merge, Concat), an AdditiveCoupling node with F and G groups, an
AffineCoupling (after ActNorm and InvConv1x1 for a Glow step), or a Group or Repeat (x2, x3) of a
wired or AdditiveCoupling block. F and G are Conv -> [Norm] -> Activation -> [Dropout] -> Conv
chains, drawn per body. Deterministic per seed; torch-free.
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
