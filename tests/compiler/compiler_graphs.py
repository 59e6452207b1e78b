"""Small project graphs the compiler tests share (built in code, checked by the real catalog)."""
from __future__ import annotations

from revstudio.core.graph import Graph


def wired_block(g: Graph, prefix: str, src: str, channels: int, *, act: bool = True,
                extra: str | None = None) -> str:
    """A RevNet block from wired couplings: split -> F -> add -> G -> add -> concat. Returns its output."""
    half = channels // 2
    g.add_node("Split", f"{prefix}s", {"sections": 2})
    g.connect(src, f"{prefix}s.in")
    g.add_node("Conv", f"{prefix}f", {"out_channels": half, "kernel_size": 3, "padding": "same"})
    g.connect(f"{prefix}s.out1", f"{prefix}f.in")
    fout = f"{prefix}f.out"
    if act:
        g.add_node("Activation", f"{prefix}fa", {"fn": "tanh"})
        g.connect(fout, f"{prefix}fa.in")
        fout = f"{prefix}fa.out"
    if extra:
        g.add_node(extra, f"{prefix}fx", {} if extra != "Dropout" else {"p": 0.3})
        g.connect(fout, f"{prefix}fx.in")
        fout = f"{prefix}fx.out"
    g.add_node("Merge", f"{prefix}m1", {"mode": "add"})
    g.connect(f"{prefix}s.out0", f"{prefix}m1.in0")
    g.connect(fout, f"{prefix}m1.in1")
    g.add_node("Conv", f"{prefix}g", {"out_channels": half, "kernel_size": 3, "padding": "same"})
    g.connect(f"{prefix}m1.out", f"{prefix}g.in")
    g.add_node("Merge", f"{prefix}m2", {"mode": "add"})
    g.connect(f"{prefix}s.out1", f"{prefix}m2.in0")
    g.connect(f"{prefix}g.out", f"{prefix}m2.in1")
    g.add_node("Concat", f"{prefix}c", {})
    g.connect(f"{prefix}m1.out", f"{prefix}c.in0")
    g.connect(f"{prefix}m2.out", f"{prefix}c.in1")
    return f"{prefix}c.out"


def wired_revnet(blocks: int, channels: int = 4, size: int = 4, *, stem: bool = False, **kw) -> Graph:
    """Input (-> Conv stem) -> N wired RevNet blocks -> Output."""
    g = Graph("wired")
    g.add_node("Input", "x", {"shape": [channels, size, size]})
    src = "x.out"
    if stem:
        g.add_node("Conv", "stem", {"out_channels": channels, "kernel_size": 3, "padding": "same"})
        g.connect(src, "stem.in")
        src = "stem.out"
    for i in range(blocks):
        src = wired_block(g, f"b{i}", src, channels, **kw)
    g.add_node("Output", "y")
    g.connect(src, "y.in")
    return g


def conv_body(channels: int, *, act: str | None = "tanh", extra: dict | None = None, init: str = "default") -> Graph:
    """A one-in/one-out group body: Conv3x3 (-> Activation) (-> extra node)."""
    body = Graph("body")
    body.add_node("GroupInput", "i")
    body.add_node("Conv", "conv", {"out_channels": channels, "kernel_size": 3, "padding": "same", "init": init})
    body.connect("i.out", "conv.in")
    last = "conv.out"
    if act:
        body.add_node("Activation", "act", {"fn": act})
        body.connect(last, "act.in")
        last = "act.out"
    if extra:
        body.add_node(extra["type"], "extra", extra.get("params", {}))
        body.connect(last, "extra.in")
        last = "extra.out"
    body.add_node("GroupOutput", "o")
    body.connect(last, "o.in")
    return body


def coupling_repeat(times: int, channels: int = 4, size: int = 4, *, extra: dict | None = None,
                    head: bool = False) -> Graph:
    """Input -> Repeat(times x AdditiveCoupling(f, g)) -> Output: the RevNet of the catalog."""
    g = Graph("coupling_repeat")
    half = channels // 2
    g.set_group("f", conv_body(half, extra=extra))
    g.set_group("g", conv_body(half))
    block = Graph("block")
    block.add_node("GroupInput", "i")
    block.add_node("AdditiveCoupling", "ac", {"f": "f", "g": "g"})
    block.add_node("GroupOutput", "o")
    block.connect("i.out", "ac.in")
    block.connect("ac.out", "o.in")
    g.set_group("block", block)
    g.add_node("Input", "x", {"shape": [channels, size, size]})
    g.add_node("Repeat", "rep", {"group": "block", "times": times})
    g.connect("x.out", "rep.in")
    last = "rep.out"
    if head:
        g.add_node("Pool", "pool", {"kind": "global_avg"})
        g.add_node("Linear", "fc", {"out_features": 3})
        g.connect(last, "pool.in")
        g.connect("pool.out", "fc.in")
        last = "fc.out"
    g.add_node("Output", "y")
    g.connect(last, "y.in")
    return g


def nested_repeat(outer: int = 2, inner: int = 2, kind: str = "Repeat") -> Graph:
    """:func:`coupling_repeat` with its Repeat moved into a group ``stack`` (a Repeat of the coupling
    block, or a Group of it with ``kind="Group"``), which a top-level Repeat runs ``outer`` times:
    a Repeat nested in a group body."""
    g = coupling_repeat(inner)
    stack = Graph("stack")
    stack.add_node("GroupInput", "i")
    stack.add_node(kind, "r", {"group": "block", "times": inner} if kind == "Repeat" else {"group": "block"})
    stack.add_node("GroupOutput", "o")
    stack.connect("i.out", "r.in")
    stack.connect("r.out", "o.in")
    g.set_group("stack", stack)
    g.set_param("rep", "group", "stack")
    g.set_param("rep", "times", outer)
    return g


def nested_quarter(channels: int = 8, size: int = 4, *, inplace_before: bool = False, blocks: int = 1) -> Graph:
    """Split in halves, split the second half in quarters, a wired coupling on the quarters,
    then concat back twice (``blocks`` times); optionally a Conv + in-place ReLU right before."""
    g = Graph("nested")
    g.add_node("Input", "x", {"shape": [channels, size, size]})
    src = "x.out"
    if inplace_before:
        g.add_node("Conv", "pre", {"out_channels": channels, "kernel_size": 1})
        g.add_node("Activation", "relu", {"fn": "relu", "inplace": True})
        g.connect(src, "pre.in")
        g.connect("pre.out", "relu.in")
        src = "relu.out"
    for i in range(blocks):
        p = "" if i == 0 else f"k{i}"
        g.add_node("Split", f"{p}s1", {"sections": 2})
        g.connect(src, f"{p}s1.in")
        wired_block(g, f"{p}q", f"{p}s1.out1", channels // 2)
        g.add_node("Concat", f"{p}c1", {})
        g.connect(f"{p}s1.out0", f"{p}c1.in0")
        g.connect(f"{p}qc.out", f"{p}c1.in1")
        src = f"{p}c1.out"
    g.add_node("Output", "y")
    g.connect(src, "y.in")
    return g


def two_stream_group(channels: int = 4, size: int = 4) -> Graph:
    """Split -> Group(2 in, 2 out: a wired coupling pair on views) -> Concat."""
    half = channels // 2
    body = Graph("pair")
    body.add_node("GroupInput", "a", {"port": "a"})
    body.add_node("GroupInput", "b", {"port": "b"})
    body.add_node("Conv", "f", {"out_channels": half, "kernel_size": 3, "padding": "same"})
    body.add_node("Merge", "m1", {"mode": "add"})
    body.add_node("Conv", "g", {"out_channels": half, "kernel_size": 3, "padding": "same"})
    body.add_node("Merge", "m2", {"mode": "sub"})
    body.add_node("GroupOutput", "ya", {"port": "ya"})
    body.add_node("GroupOutput", "yb", {"port": "yb"})
    body.connect("b.out", "f.in")
    body.connect("a.out", "m1.in0")
    body.connect("f.out", "m1.in1")
    body.connect("m1.out", "g.in")
    body.connect("b.out", "m2.in0")
    body.connect("g.out", "m2.in1")
    body.connect("m1.out", "ya.in")
    body.connect("m2.out", "yb.in")
    g = Graph("two_stream")
    g.set_group("pair", body)
    g.add_node("Input", "x", {"shape": [channels, size, size]})
    g.add_node("Split", "s", {"sections": 2})
    g.add_node("Group", "grp", {"group": "pair"})
    g.add_node("Concat", "c", {})
    g.add_node("Output", "y")
    g.connect("x.out", "s.in")
    g.connect("s.out0", "grp.a")
    g.connect("s.out1", "grp.b")
    g.connect("grp.ya", "c.in0")
    g.connect("grp.yb", "c.in1")
    g.connect("c.out", "y.in")
    return g


def birnn_first(cell: str = "lstm", length: int = 6) -> Graph:
    """A sequence classifier whose very first layer is a BiRNN."""
    g = Graph("birnn_first")
    g.add_node("Input", "x", {"shape": [3, length]})
    g.add_node("BiRNN", "rnn", {"hidden_size": 4, "cell": cell})
    g.add_node("Linear", "head", {"out_features": 2})
    g.add_node("Output", "y")
    g.connect("x.out", "rnn.in")
    g.connect("rnn.out", "head.in")
    g.connect("head.out", "y.in")
    return g


def two_branch(merge: str = "stack", zero_branch: bool = False, size: int = 4) -> Graph:
    """One input fans out to two Conv -> BiRNN branches, merged into a zero-initialised Linear head."""
    g = Graph("two_branch")
    g.add_node("Input", "x", {"shape": [2, size, size]})
    for k in ("a", "b"):
        init = "zeros" if (zero_branch and k == "b") else "default"
        g.add_node("Conv", f"conv_{k}", {"out_channels": 3, "kernel_size": 3, "padding": "same", "init": init})
        g.add_node("BiRNN", f"rnn_{k}", {"hidden_size": 2, "cell": "gru" if k == "a" else "lstm", "init": init})
        g.connect("x.out", f"conv_{k}.in")
        g.connect(f"conv_{k}.out", f"rnn_{k}.in")
    g.add_node("Merge", "m", {"mode": merge})
    g.connect("rnn_a.out", "m.in0")
    g.connect("rnn_b.out", "m.in1")
    g.add_node("Linear", "head", {"out_features": 3, "init": "zeros"})
    g.connect("m.out", "head.in")
    g.add_node("Output", "y")
    g.connect("head.out", "y.in")
    return g


def glow(size: int = 4) -> Graph:
    """Squeeze -> ActNorm -> InvConv1x1 -> AffineCoupling(net): a Glow step."""
    g = Graph("glow")
    g.set_group("net", conv_body(8, act=None))
    g.add_node("Input", "x", {"shape": [2, size, size]})
    g.add_node("Squeeze", "sq", {"factor": 2})
    g.add_node("ActNorm", "an", {})
    g.add_node("InvConv1x1", "inv", {})
    g.add_node("AffineCoupling", "aff", {"net": "net"})
    g.add_node("Output", "y")
    for a, b in (("x", "sq"), ("sq", "an"), ("an", "inv"), ("inv", "aff"), ("aff", "y")):
        g.connect(f"{a}.out", f"{b}.in")
    return g


def plain_chain(layers: int = 3, channels: int = 4, size: int = 4) -> Graph:
    """No invertible part: Conv -> Norm(batch) -> Dropout -> tanh, repeated."""
    g = Graph("plain")
    g.add_node("Input", "x", {"shape": [channels, size, size]})
    src = "x.out"
    for i in range(layers):
        for kind, params in (("Conv", {"out_channels": channels, "kernel_size": 3, "padding": "same"}),
                             ("Norm", {}), ("Dropout", {"p": 0.3}), ("Activation", {"fn": "tanh"})):
            nid = f"{kind.lower()}{i}"
            g.add_node(kind, nid, params)
            g.connect(src, f"{nid}.in")
            src = f"{nid}.out"
    g.add_node("Output", "y")
    g.connect(src, "y.in")
    return g
