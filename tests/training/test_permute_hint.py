"""Data stored N x steps x features for a features x steps Input: the refusal names, beside the
numpy.transpose, the Input shape and Permute of kind axes that read the array as saved, and doing
what it says makes the same file load."""
from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from training_kit import EXAMPLES  # noqa: E402

from revstudio.core.check import check  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.training.data import DataError, load_data  # noqa: E402
from revstudio.training.task import infer_task  # noqa: E402


def _load(graph, path):  # type: ignore[no-untyped-def]
    report = check(graph)
    assert report.valid, [str(d) for d in report.errors]
    return load_data(path, graph, report, task=infer_task(graph, report, "auto"))


def test_the_refusal_names_the_permute_and_following_it_loads_the_file(tmp_path) -> None:
    graph = load(EXAMPLES[[p.stem for p in EXAMPLES].index("birnn_sequence")])  # Input 12 features x 32 steps
    x = np.random.default_rng(0).standard_normal((20, 32, 12)).astype(np.float32)  # N x steps x features
    np.savez(tmp_path / "seq.npz", x=x, y=np.zeros(20, np.int64))
    with pytest.raises(DataError) as err:
        _load(graph, str(tmp_path / "seq.npz"))
    said = re.search(r"set the Input node to (\d+)x(\d+) and put a Permute \(kind axes, dims \[(\d), (\d)\]\) "
                     r"after it", str(err.value))
    assert said, str(err.value)
    rows, cols, *dims = (int(v) for v in said.groups())
    graph.set_param("sequence", "shape", [rows, cols])
    graph.add_node("Permute", "to_channels", {"kind": "axes", "dims": dims})
    (edge,) = [e for e in graph.edges if str(e.src) == "sequence.out"]
    graph.remove_edge(edge)
    graph.connect("sequence.out", "to_channels.in")
    graph.connect("to_channels.out", str(edge.dst))
    data = _load(graph, str(tmp_path / "seq.npz"))
    assert data is not None


def test_time_major_data_gets_no_permute_advice(tmp_path) -> None:
    graph = load(EXAMPLES[[p.stem for p in EXAMPLES].index("birnn_sequence")])
    x = np.random.default_rng(0).standard_normal((32, 20, 12)).astype(np.float32)  # steps x N x features
    np.savez(tmp_path / "seq.npz", x=x, y=np.zeros(20, np.int64))
    with pytest.raises(DataError, match="axis 1 holds the samples") as err:
        _load(graph, str(tmp_path / "seq.npz"))
    assert "Permute" not in str(err.value)
