"""The whole-graph passes an edit re-runs (regions, estimate, peaks, a budget's cuts) give every
figure byte for byte as recorded before they were sped up (``pass_outputs.py``)."""
from __future__ import annotations

import json

import pytest
from pass_outputs import CASES, RECORDED, digest, graphs, outputs

RECORDS = json.loads(RECORDED.read_text())
GRAPHS = graphs()


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_every_figure_as_recorded(name: str) -> None:
    for batch, device in CASES:
        key = f"{name} batch {batch} {device}"
        assert digest(outputs(GRAPHS[name], batch, device)) == RECORDS[key], key
