"""Class labels per step (sequence tagging: y of N x steps whole numbers for a K x steps Output)
are refused with why and the two ways that train, under auto and under task classification; the
refusal said only that 'y' had shape 64 for an Output of 3x64, as for any misshapen target."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from revstudio.core.graph import Graph
from revstudio.diagnostics.check import full_check
from revstudio.training.data import DataError, load_data
from revstudio.training.task import infer_task

K, STEPS, N = 3, 10, 16


def _tagger() -> Graph:
    """x (4 features x STEPS) -> BiRNN -> a 1x1 Conv of K scores per step -> Output K x STEPS."""
    g = Graph("tagger")
    g.add_node("Input", "x", {"shape": [4, STEPS]})
    g.add_node("BiRNN", "rnn", {"cell": "gru", "hidden_size": 3})
    g.add_node("Conv", "head", {"out_channels": K, "kernel_size": 1})
    g.add_node("Output", "tags", {})
    for a, b in (("x", "rnn"), ("rnn", "head"), ("head", "tags")):
        g.connect(f"{a}.out", f"{b}.in")
    return g


def _load(tmp_path: Path, y: np.ndarray, requested: str = "auto"):
    g = _tagger()
    x = np.random.default_rng(0).standard_normal((N, 4, STEPS)).astype(np.float32)
    np.savez(tmp_path / "tags.npz", x=x, y=y)
    report = full_check(g, batch=8)
    return load_data("tags.npz", g, report, task=infer_task(g, report, requested), base_dir=str(tmp_path))


def test_per_step_class_indices_are_refused_with_the_ways_that_train(tmp_path):
    labels = np.random.default_rng(1).integers(0, K, (N, STEPS))
    with pytest.raises(DataError) as info:
        _load(tmp_path, labels)
    text = str(info.value)
    assert f"array 'y' holds a class index per step ({STEPS} whole numbers a sample), Output 'tags' reads " \
           f"{K}x{STEPS}" in text
    assert "classes per step are not a task revstudio trains" in text
    assert "y = numpy.moveaxis(numpy.eye(K, dtype=numpy.float32)[y], -1, 1)" in text
    # the advice trains: one-hot float scores per step are regression targets of the Output's shape
    one_hot = np.moveaxis(np.eye(K, dtype=np.float32)[labels], -1, 1)
    data = _load(tmp_path, one_hot)
    assert data.task.kind == "regression" and tuple(data.train.targets.shape[1:]) == (K, STEPS)


def test_task_classification_on_a_per_step_output_says_the_same(tmp_path):
    g = _tagger()
    with pytest.raises(DataError) as info:
        infer_task(g, full_check(g, batch=8), "classification")
    assert "classes per step are not a task revstudio trains" in str(info.value)


def test_float_targets_of_a_steps_shape_still_reshape_as_regression(tmp_path):
    g = Graph("reg")
    g.add_node("Input", "x", {"shape": [4, STEPS]})
    g.add_node("BiRNN", "rnn", {"cell": "gru", "hidden_size": 3})
    g.add_node("Conv", "head", {"out_channels": 1, "kernel_size": 1})
    g.add_node("Output", "y", {})
    for a, b in (("x", "rnn"), ("rnn", "head"), ("head", "y")):
        g.connect(f"{a}.out", f"{b}.in")
    np.savez(tmp_path / "r.npz", x=np.zeros((N, 4, STEPS), np.float32), y=np.ones((N, STEPS), np.float32))
    report = full_check(g, batch=8)
    data = load_data("r.npz", g, report, task=infer_task(g, report), base_dir=str(tmp_path))
    assert tuple(data.train.targets.shape[1:]) == (1, STEPS)


def test_whole_number_targets_for_one_value_a_step_stay_regression_targets(tmp_path):
    g = _tagger()
    g.node("head").params["out_channels"] = 1
    np.savez(tmp_path / "counts.npz", x=np.zeros((N, 4, STEPS), np.float32), y=np.arange(N * STEPS).reshape(N, STEPS))
    report = full_check(g, batch=8)
    data = load_data("counts.npz", g, report, task=infer_task(g, report), base_dir=str(tmp_path))
    assert data.task.kind == "regression" and tuple(data.train.targets.shape[1:]) == (1, STEPS)
