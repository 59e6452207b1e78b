"""A wired coupling's F in a reversible region's backward, walked layer by layer: the moment
its graph and two gradients are alive comes before its first layer's weights have their
gradients, which at a small batch are most of the step (``peak_steps.wired_walk``)."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from estimate_errors import estimate_errors  # noqa: E402

from revstudio.core.generate import revnet_chain  # noqa: E402
from revstudio.core.project import load  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


@pytest.mark.parametrize(("name", "batch"), [("digits_revnet", 1), ("digits_revnet", 2), ("digits_revnet", 16),
                                             ("birnn_sequence", 1), ("birnn_sequence", 2)])
def test_examples_with_wired_couplings_are_estimated_to_the_measured_peak(name: str, batch: int) -> None:
    # before: digits_revnet +4.3 %, +0.8 %, +0.7 %; birnn_sequence +1.4 %, +0.9 %
    error = estimate_errors(load(EXAMPLES / f"{name}.revs"), batch, ("reversible",))["reversible"]
    assert abs(error) < 0.001, f"{name} at batch {batch}: {error:+.2%}"


@pytest.mark.parametrize("batch", [1, 2, 8])
def test_a_chain_whose_weights_outweigh_its_activations(batch: int) -> None:
    """32 channels at 4x4: each F's weights (18.6 KB a conv) are larger than a batch-1 half-stream
    (1 KB), so when each weight's gradient appears decides the peak."""
    graph = revnet_chain(3, channels=32, size=4)
    error = estimate_errors(graph, batch, ("reversible",))["reversible"]
    assert abs(error) < 0.001, f"batch {batch}: {error:+.2%}"
