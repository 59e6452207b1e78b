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


def wired_revnet(blocks: int, channels: int = 4, size: int = 4, **kw) -> Graph:
    g = Graph("wired")
    g.add_node("Input", "x", {"shape": [channels, size, size]})
    src = "x.out"
    for i in range(blocks):
        src = wired_block(g, f"b{i}", src, channels, **kw)
    g.add_node("Output", "y")
    g.connect(src, "y.in")
    return g
