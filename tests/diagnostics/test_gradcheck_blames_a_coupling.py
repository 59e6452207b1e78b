"""A region whose AffineCoupling does not invert names the coupling in gradcheck's per-node blame.

A region runs a coupling as its parts (slice, affine step, concatenation), so the coupling's own
forward never runs there and a forward hook on it never fired: gradcheck said only "region ...:
inversion error nan" and listed the ActNorm beside it as exact.
"""
from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.core.generate import Builder, _body, glow_repeat  # noqa: E402
from revstudio.diagnostics.gradcheck import compare_modes, node_inversion_errors, summarize  # noqa: E402


def _graph() -> Any:
    b = Builder("coupled")
    b.node("Input", "x", shape=[4, 2, 2])

    def net(bb: Builder, s: str) -> str:
        bb.node("Conv", "st", out_channels=4, kernel_size=1)
        return bb.chain(s, "st")

    b.graph.groups["net"] = _body("net", net)
    b.node("ActNorm", "norm")
    b.node("AffineCoupling", "coupling", net="net", clamp=0.0)
    b.node("Output", "z")
    b.chain("x.out", "norm", "coupling", "z")
    return b.done()


def test_a_coupling_whose_scale_underflows_is_named() -> None:
    graph = _graph()
    state = {k: v.clone() for k, v in compile_graph(graph, dtype=torch.float32, device="cpu").state_dict().items()}
    state["coupling.net.st.bias"][:2] = -100.0  # exp(s) = 0 in float32: y2 = t, and the inverse is 0 * inf
    state["norm.initialized"].fill_(1)
    report = compare_modes(graph, dtype="float32", state=state)
    assert report.node_types.get("coupling") == "AffineCoupling"
    assert report.node_inversion["coupling"] == float("inf")
    assert report.node_inversion["norm"] < 1e-6
    assert any(line.startswith("node coupling (AffineCoupling): inverse(forward(x)) differs") for line in report.failures())
    assert "node coupling: inverse(forward(x)) error inf" in "\n".join(summarize(report))


def test_couplings_in_a_repeat_are_measured_by_their_copy() -> None:
    torch.manual_seed(0)
    model = compile_graph(glow_repeat(2, size=4), dtype=torch.float64, device="cpu")
    x = torch.randn(2, 3, 4, 4, dtype=torch.float64)
    model.initialize(x)
    errors, types = node_inversion_errors(model, [x])
    couplings = sorted(name for name, kind in types.items() if kind == "AffineCoupling")
    assert len(couplings) == 2 and all(".blocks." in n and n.endswith("/coupling") for n in couplings)  # one a copy
    assert all(errors[name] < 1e-12 for name in couplings)
