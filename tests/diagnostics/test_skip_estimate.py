"""A skip connection around a reversible region: the estimate against the measured peak.

A Merge (add) of the stem's output and the region's output hands each operand the same
gradient. In checkpoint mode the skip runs in a segment of its own, whose backward gives its
two inputs that one buffer; counted as a buffer each, the estimate was 12-18 % over
(``benchmarks/bench_estimate_skips.py``).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.diagnostics.estimate import MODES, estimate_peak  # noqa: E402
from revstudio.diagnostics.gradcheck import random_inputs  # noqa: E402
from revstudio.diagnostics.memory import measure_step  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_wired.revs"


def _with_skip(tmp_path: Path) -> Path:
    data = json.loads(EXAMPLE.read_text())
    for edge in data["edges"]:
        if edge[0] == "block1_cat.out":
            edge[0] = "skip.out"
    data["nodes"].append({"id": "skip", "type": "Merge", "params": {"mode": "add"}, "pos": [0, 0]})
    data["edges"] += [["block1_cat.out", "skip.in0"], ["stem.out", "skip.in1"]]
    path = tmp_path / "revnet_wired_skip.revs"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("batch", [2, 8])
def test_a_skip_around_the_region_is_estimated_as_measured(tmp_path: Path, batch: int) -> None:
    graph = load(_with_skip(tmp_path))
    report = full_check(graph, batch=batch)
    torch.manual_seed(0)
    model = compile_graph(graph, mode="standard")
    inputs = random_inputs(graph, batch, torch.float32, requires_grad=False)
    for mode in MODES:
        model.mode = mode
        measured = measure_step(model, inputs, timing_runs=0)["peak_bytes"]
        estimated = estimate_peak(graph, report, batch=batch, mode=mode)
        assert abs(estimated / measured - 1) < 0.005, (mode, estimated, measured)
