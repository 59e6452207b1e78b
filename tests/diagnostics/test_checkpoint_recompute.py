"""A checkpoint segment's recompute as the walk prices it: torch.utils.checkpoint recomputes the
segment when backward reaches it, with its outputs' gradients already made, and stops once the
last tensor its backward needs is saved, the layer that saves it still holding its output beside
what it keeps (``peak.simulate(early_stop=True)``)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from revstudio.diagnostics.peak import Unit, simulate

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))


def _recompute(shared: int | None) -> int:
    """x (outside) -> a -> b, 1,000 bytes a value; a keeps 3,000 B of its own, b 4,000 B (of
    which ``shared`` are new as its forward ends); b's gradient is seeded."""
    units = [Unit("a", [("x", "out")], [("a", "out")], extra=3000),
             Unit("b", [("a", "out")], [("b", "out")], extra=4000, extra_fwd=shared)]
    walk = simulate(units, lambda v: 1000, lambda v: v, lambda v: v[0] != "x", outside=[("x", "out")],
                    early_stop=True, seeds=[(("b", "out"), False)])
    return walk.peak


def test_the_recompute_peaks_where_it_stops() -> None:
    # backward at b: what a and b keep, b's gradient and a's new one (9,000 B); before that, as
    # the recompute stops at b: a, b, both layers' kept tensors and b's gradient (10,000 B)
    assert _recompute(None) == 10_000
    # where 1,000 B of what b keeps is its input itself (a batch of one InvConv1x1's copy),
    # backward's moment is the larger
    assert _recompute(3000) == 9_000


def test_a_flow_segments_recompute_is_estimated() -> None:
    """Random network 18: a checkpointed ActNorm and InvConv1x1 (``lu=False``). Its recompute
    stops at the InvConv1x1's log-determinant, which holds the einsum's channels-first copy of
    the input and its output beside the ActNorm's and the segment's output gradient: at batch 2
    the estimate was 7.1 % under (54,008 B against 58,112 measured). At batch 1 the copy is the
    input itself, which the walk counts once (priced as a copy there, it was 8.9 % over)."""
    pytest.importorskip("torch")
    from estimate_errors import estimate_errors
    from random_revnets import random_revnet

    graph = random_revnet(18)
    assert abs(estimate_errors(graph, 2, ("checkpoint",))["checkpoint"]) < 0.005
    assert -0.02 < estimate_errors(graph, 1, ("checkpoint",))["checkpoint"] < 0.005
