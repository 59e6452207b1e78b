"""A region that does not invert is traced to the node whose layer's inverse does not undo its
forward, and a plugin's type is named as the plugin's (a helper's plugin probe: gradcheck said
only "region ...: inversion error 0.333")."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from revstudio.core.generate import Builder, add_coupling_groups  # noqa: E402
from revstudio.core.spec import NodeSpec, registry  # noqa: E402
from revstudio.diagnostics.gradcheck import compare_modes, summarize  # noqa: E402


class Doubling(torch.nn.Module):
    """y = 2x, with an inverse that divides by ``by`` (3: wrong)."""

    def __init__(self, by: float) -> None:
        super().__init__()
        self.by = by

    def forward(self, x: Any) -> tuple[Any]:
        return (x * 2,)

    def inverse(self, y: Any) -> tuple[Any]:
        return (y / self.by,)


@pytest.fixture
def doubling() -> Iterator[None]:
    made = [NodeSpec(type_id=name, category="Test", help="", params={}, inputs=("in",), outputs=("out",),
                     infer=lambda ctx: {"out": ctx.input("in")}, count_params=lambda ctx: 0,
                     build=lambda ctx, by=by: Doubling(by), invertible=True)
            for name, by in (("RightDoubling", 2.0), ("WrongDoubling", 3.0))]
    for spec in made:
        registry.register(spec)
    yield
    for spec in made:
        registry._specs.pop(spec.type_id, None)


def _graph(kind: str) -> Any:
    b = Builder("doubled")
    b.node("Input", "x", shape=[4, 4, 4])
    b.node("AdditiveCoupling", "c0", f="f", g="g")
    b.node(kind, "twice")
    b.node("AdditiveCoupling", "c1", f="f", g="g")
    b.node("Output", "y")
    b.chain("x.out", "c0", "twice", "c1", "y")
    graph = b.done()
    add_coupling_groups(graph, 4)
    return graph


def test_the_node_whose_inverse_is_wrong_is_named(doubling: None) -> None:
    report = compare_modes(_graph("WrongDoubling"), mode="reversible")
    assert not report.ok
    assert report.node_inversion["twice"] == pytest.approx(1 / 3, rel=1e-6)
    assert all(e < 1e-12 for node, e in report.node_inversion.items() if node != "twice")
    failures = report.failures()
    assert ("node twice (WrongDoubling): inverse(forward(x)) differs from x by 0.333; the layer's inverse "
            "does not undo its forward") in failures, failures
    assert not any(line.startswith("node c0") or line.startswith("node c1") for line in failures)
    assert "node twice: inverse(forward(x)) error 0.333" in "\n".join(summarize(report))
    assert report.to_json()["node_inversion_error"]["twice"] == pytest.approx(1 / 3, rel=1e-6)


def test_a_region_that_inverts_costs_no_per_node_pass(doubling: None) -> None:
    report = compare_modes(_graph("RightDoubling"), mode="reversible")
    assert report.ok and report.node_inversion == {}
