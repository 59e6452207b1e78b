"""The estimate on random reversible sequence models (``benchmarks/random_revnets.py``'s
``random_seqnet``: 1-D convolutions, BiRNNs in F and G, Glow steps on sequences), and on the
single-layer F they found wrong."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from random_revnets import FAMILIES, random_seqnet  # noqa: E402

from revstudio.diagnostics.check import full_check  # noqa: E402


def test_random_seqnets_are_valid_and_draw_every_kind_of_layer() -> None:
    kinds: set[str] = set()
    for seed in range(40):
        graph = random_seqnet(seed)
        report = full_check(graph, batch=2)
        assert report.valid, (seed, [d.message for d in report.diagnostics])
        assert report.regions, seed
        assert len(report.nodes["x"].outputs["out"]) == 2, seed  # (features, steps)
        kinds |= {n.type for n in graph} | {n.type for body in graph.groups.values() for n in body}
    assert {"BiRNN", "Conv", "Linear", "Reshape", "Flatten", "Pool", "Norm", "AdditiveCoupling",
            "AffineCoupling", "ActNorm", "InvConv1x1", "Permute", "Group", "Repeat", "Dropout"} <= kinds
    assert FAMILIES["seq"] is random_seqnet

