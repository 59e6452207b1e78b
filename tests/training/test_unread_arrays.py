"""Arrays of a .npz / .pt that no run reads (a padded sequence set's ``lengths`` and ``mask``) are
named at the start (the terminal, the ``started`` row, the app's Log), with what revstudio does
with the padding (tests/codegen/test_training_script_unread.py: the exported script says the same): they
were dropped without a word, so a sequence researcher
believed the run masked the padded steps."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from revstudio.core.generate import sequence_classifier
from revstudio.core.graph import Graph
from revstudio.diagnostics.check import full_check
from revstudio.training.data import load_data
from revstudio.training.task import infer_task

STEPS, FEATURES, N = 12, 4, 24


def _sequence_classifier() -> Graph:
    g = sequence_classifier(FEATURES, STEPS)
    g.training = {"steps": 1, "batch_size": 8, "log_every": 1, "val_every": 1, "gradcheck_every": 0,
                  "memory_every": 0, "checkpoint_every": 0}
    return g


def _padded(**extra: np.ndarray) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    lengths = rng.integers(4, STEPS + 1, N)
    x = rng.standard_normal((N, FEATURES, STEPS)).astype(np.float32)
    x = np.where(np.arange(STEPS)[None, None, :] < lengths[:, None, None], x, np.float32(0.0))
    return {"x": x, "y": np.arange(N) % 3, **extra}


def _note(graph: Graph, spec: str, tmp_path: Path, **kw) -> str | None:
    report = full_check(graph, batch=8)
    return load_data(spec, graph, report, task=infer_task(graph, report), base_dir=str(tmp_path),
                     **kw).inputs_note()


def test_lengths_and_mask_of_a_npz_are_named_with_what_becomes_of_the_padding(tmp_path):
    arrays = _padded()
    np.savez(tmp_path / "seq.npz", **arrays, lengths=np.full(N, STEPS), mask=np.ones((N, STEPS), bool))
    note = _note(_sequence_classifier(), "seq.npz", tmp_path)
    assert note is not None
    assert "seq.npz has arrays 'lengths', 'mask' that the run does not read" in note
    assert "'lengths', 'mask') are read for class labels per step only" in note  # (a label a sample here)
    assert "every sample is fed whole, padded steps included" in note
    assert "crop or bucket the sequences to one length" in note


def test_a_pt_with_a_padding_mask_and_its_validation_file_are_named_each(tmp_path):
    arrays = {k: torch.from_numpy(np.asarray(v)) for k, v in _padded().items()}
    torch.save({**arrays, "pad_mask": torch.ones(N, STEPS, dtype=torch.bool)}, tmp_path / "train.pt")
    np.savez(tmp_path / "val.npz", **_padded(), seq_len=np.full(N, STEPS))
    note = _note(_sequence_classifier(), "train.pt", tmp_path, val_spec="val.npz")
    assert note is not None
    assert "train.pt has an array 'pad_mask' that the run does not read" in note
    assert "val.npz has an array 'seq_len' that the run does not read" in note


def test_another_unread_array_is_named_without_the_padding_words(tmp_path):
    np.savez(tmp_path / "d.npz", **_padded(), ids=np.arange(N))
    note = _note(_sequence_classifier(), "d.npz", tmp_path)
    assert note is not None
    assert "d.npz has an array 'ids' that the run does not read" in note
    assert "padded steps" not in note


def test_a_file_of_only_the_arrays_read_says_nothing(tmp_path):
    np.savez(tmp_path / "d.npz", **_padded())
    assert _note(_sequence_classifier(), "d.npz", tmp_path) is None


def test_per_input_arrays_leave_an_x_unread_named(tmp_path):
    g = Graph("two")
    g.add_node("Input", "a", {"shape": [3]})
    g.add_node("Input", "b", {"shape": [3]})
    g.add_node("Merge", "m", {"mode": "add"})
    g.add_node("Linear", "fc", {"out_features": 2})
    g.add_node("Output", "y", {})
    g.connect("a.out", "m.in0")
    g.connect("b.out", "m.in1")
    g.connect("m.out", "fc.in")
    g.connect("fc.out", "y.in")
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "d.npz", a=rng.standard_normal((8, 3)), b=rng.standard_normal((8, 3)),
             x=rng.standard_normal((8, 3)), y=np.arange(8) % 2)
    note = _note(g, "d.npz", tmp_path)
    assert note is not None and "d.npz has an array 'x' that the run does not read" in note
