"""The 2-D flow the sampling tests train: a RealNVP on points (two moons, as a 2-D flow's toy data are).

A plain module beside the tests' conftest (as ``pixel_kit``): the sampling tests of the CLI and Python
API and the Runs tab's Sample… tests both import it by name.
"""
from __future__ import annotations

from revstudio.core.generate import Builder


def moons_realnvp() -> Builder:
    """ActNorm, an AffineCoupling, a reversal and another AffineCoupling over 2 values, both couplings'
    nets one group (Linear 8, tanh, Linear 2)."""
    b = Builder("moons")
    b.node("Input", "x", shape=[2])
    net = Builder("net")
    net.node("GroupInput", "in")
    net.chain("in", net.node("Linear", "l1", out_features=8), net.node("Activation", "a", fn="tanh"),
              net.node("Linear", "l2", out_features=2), net.node("GroupOutput", "out"))
    b.graph.groups["net"] = net.graph
    b.chain("x", b.node("ActNorm", "an"), b.node("AffineCoupling", "c0", net="net"),
            b.node("Permute", "p", kind="reverse"), b.node("AffineCoupling", "c1", net="net"), b.node("Output", "z"))
    return b
