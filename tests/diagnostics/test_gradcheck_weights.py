"""compare_modes(state=...): the gradient check of trained weights (a run's checkpoint), not fresh ones."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.diagnostics.gradcheck import compare_modes  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_coupling.revs"


def test_given_weights_are_the_ones_checked():
    graph = load(EXAMPLE)
    fresh = compare_modes(graph)
    model = compile_graph(graph, mode="standard", dtype=torch.float32)
    trained = {k: v * 1.5 if v.is_floating_point() else v for k, v in model.state_dict().items()}
    checked = compare_modes(graph, state=trained)
    assert checked.ok and checked.dtype == "float64"  # the float32 weights were cast for the comparison
    assert checked.gradient_norm != pytest.approx(fresh.gradient_norm)
    norms = {t.name: t.norm for t in checked.parameters}
    again = compare_modes(graph, state=trained)
    assert {t.name: t.norm for t in again.parameters} == norms  # deterministic for the same weights
