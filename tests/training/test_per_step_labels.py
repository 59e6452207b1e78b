"""Class labels per step (sequence tagging): N x T class indices for a C x T Output (channels first)
train with cross-entropy over the steps, labels of -100 and a file's ``lengths`` / ``mask`` not scored.
They were refused with advice to pool or to regress one-hot scores; a padded set's lengths and mask
were named as arrays no run reads. Bad labels, lengths and layouts are refused naming what to fix."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from labels_kit import load_labelled

from revstudio.core.generate import sequence_tagger
from revstudio.core.graph import Graph
from revstudio.diagnostics.check import full_check
from revstudio.training.data import DataError, load_data
from revstudio.training.parts import Loss
from revstudio.training.task import infer_task

K, STEPS, N = 3, 10, 16


def _tagger() -> Graph:
    """x (4 features x STEPS) -> BiRNN -> a 1x1 Conv of K scores per step -> Output 'tags' (K x STEPS)."""
    return sequence_tagger(4, STEPS, K)


def _x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((N, 4, STEPS)).astype(np.float32)


def _load(tmp_path: Path, y: np.ndarray, requested: str = "auto", g: Graph | None = None, **arrays: np.ndarray):
    return load_labelled(tmp_path, "tags.npz", g or _tagger(), _x(), y, requested, 8, **arrays)


def _labels() -> np.ndarray:
    return np.random.default_rng(1).integers(0, K, (N, STEPS))


@pytest.mark.parametrize("requested", ["auto", "classification"])
def test_integer_labels_per_step_are_classification_per_step(tmp_path, requested):
    labels = _labels()
    data = _load(tmp_path, labels, requested)
    assert data.task.kind == "classification" and data.task.per_step and data.task.num_classes == K
    assert data.train.targets.dtype == torch.int64 and tuple(data.train.targets.shape) == (N, STEPS)
    assert torch.equal(data.train.targets, torch.from_numpy(labels))
    assert "classification per step (3 classes x 10 steps" in data.task.describe()
    assert data.describe().endswith("3 classes per step")
    note = data.inputs_note()
    assert note is not None and f"loss and accuracy count the {N * STEPS} scored steps of {N * STEPS}" in note


def test_lengths_and_mask_mark_steps_not_scored_and_the_start_says_padding_is_still_fed(tmp_path):
    labels = _labels()
    labels[:, -2:] = 9  # whatever the padding holds: never checked, never scored
    lengths = np.full(N, STEPS - 2)
    mask = np.ones((N, STEPS), np.int8)
    mask[0, 0] = 0
    data = _load(tmp_path, labels, lengths=lengths, mask=mask)
    t = data.train.targets
    assert bool((t[:, -2:] == -100).all()) and int(t[0, 0]) == -100 and int((t != -100).sum()) == N * (STEPS - 2) - 1
    note = data.inputs_note()
    assert "'lengths' and 'mask' mark the rest" in note and "does not read" not in note
    assert "padded steps are still fed to the network (a BiRNN's backward direction reads them" in note


def test_labels_of_minus_100_are_not_scored_and_said(tmp_path):
    labels = _labels()
    labels[3, 4] = -100
    data = _load(tmp_path, labels)
    assert int(data.train.targets[3, 4]) == -100
    assert f"count the {N * STEPS - 1} scored steps of {N * STEPS} (labels of -100 mark the rest)" in data.inputs_note()


def test_a_label_out_of_range_is_refused_naming_the_first_sample_and_step(tmp_path):
    labels = _labels()
    labels[5, 7] = K
    labels[9, 1] = K + 4
    with pytest.raises(DataError) as info:
        _load(tmp_path, labels)
    text = str(info.value)
    assert "array 'y' has the label 3 at sample 5, step 7; per-step labels are class indices 0..2" in text
    assert "give node 'head' 8 outputs or relabel the data" in text
    labels = _labels()
    labels[2, 6] = -1  # padding marked with -1 instead of -100
    with pytest.raises(DataError, match=r"the label -1 at sample 2, step 6; .*mark padding with -100"):
        _load(tmp_path, labels)


def test_lengths_longer_than_the_steps_are_refused_naming_the_sample(tmp_path):
    lengths = np.full(N, STEPS)
    lengths[4] = STEPS + 3
    with pytest.raises(DataError, match=r"array 'lengths' gives sample 4 the length 13, and its labels have 10 steps"):
        _load(tmp_path, _labels(), lengths=lengths)
    with pytest.raises(DataError, match=r"array 'mask' has shape 16x9; .*save an N x T array of 16 x 10"):
        _load(tmp_path, _labels(), mask=np.ones((N, STEPS - 1)))


def test_a_sample_with_no_step_scored_is_refused(tmp_path):
    lengths = np.full(N, STEPS)
    lengths[6] = 0
    with pytest.raises(DataError) as info:
        _load(tmp_path, _labels(), lengths=lengths)
    assert "sample 6 has no step scored (its length is 0; 1 sample so): a batch of only such samples has no loss" \
        in str(info.value)
    labels = _labels()
    labels[2] = -100
    with pytest.raises(DataError, match=r"sample 2 has no step scored \(every label is -100"):
        _load(tmp_path, labels)


def test_scores_steps_by_classes_are_refused_naming_the_port_the_shapes_and_the_fix(tmp_path):
    g = Graph("wrong")  # x (STEPS x 4) -> a 1x1 Conv of STEPS channels: STEPS x 4, steps first
    g.add_node("Input", "x", {"shape": [STEPS, 4]})
    g.add_node("Conv", "head", {"out_channels": STEPS, "kernel_size": 1})
    g.add_node("Output", "tags", {})
    g.connect("x.out", "head.in")
    g.connect("head.out", "tags.in")
    np.savez(tmp_path / "t.npz", x=np.zeros((N, STEPS, 4), np.float32), y=np.zeros((N, STEPS), np.int64))
    report = full_check(g, batch=8)
    with pytest.raises(DataError) as info:
        load_data("t.npz", g, report, task=infer_task(g, report), base_dir=str(tmp_path))
    text = str(info.value)
    assert "Output 'tags' (port 'tags.in') reads 10x4 per sample and the labels have 10 steps" in text
    assert "channels first, classes x steps (N x C x T" in text and "a Conv with kernel_size 1" in text
    with pytest.raises(DataError, match=r"reads 3x10 per sample \(3 classes x 10 steps\) and the labels have 7"):
        _load(tmp_path, np.zeros((N, 7), np.int64))


def test_task_classification_with_one_label_a_sample_on_a_per_step_output_is_refused(tmp_path):
    with pytest.raises(DataError, match=r"per-step classification needs labels of N x 10; for one class a sample"):
        _load(tmp_path, np.arange(N) % K, "classification")


def test_the_loss_is_cross_entropy_over_the_scored_steps_and_accuracy_counts_them_only():
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(4, K, STEPS, generator=gen)
    labels = torch.randint(0, K, (4, STEPS), generator=gen)
    labels[0, 3:] = -100
    loss, correct = Loss("classification")(scores, labels, None)
    assert torch.allclose(loss, torch.nn.CrossEntropyLoss(ignore_index=-100)(scores, labels))
    scored = labels != -100
    assert int(correct) == int(((scores.argmax(1) == labels) & scored).sum())
    assert Loss("classification").counted(labels, 4) == int(scored.sum())
    assert Loss("classification").counted(labels[:, 0].clamp(min=0), 4) == 4  # (a label a sample: the samples)


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
    data = _load(tmp_path, np.arange(N * STEPS).reshape(N, STEPS), g=g)
    assert data.task.kind == "regression" and tuple(data.train.targets.shape[1:]) == (1, STEPS)


def test_float_scores_of_the_outputs_shape_stay_regression_under_auto(tmp_path):
    targets = np.random.default_rng(2).standard_normal((N, K, STEPS)).astype(np.float32)
    data = _load(tmp_path, targets)
    assert data.task.kind == "regression" and not data.task.per_step
    assert tuple(data.train.targets.shape) == (N, K, STEPS)


def test_check_says_why_a_c_by_t_output_is_classification_per_step():
    from revstudio.clicmd.check import training_task

    g = _tagger()
    g.training = {"task": "classification"}
    said = training_task(g, full_check(g, batch=8))
    assert said is not None and said["kind"] == "classification"
    assert "'tags' reads 3x10: 3 class scores for each of 10 steps (channels first), for N x 10 labels" in said["why"]
    g.training = {}
    said = training_task(g, full_check(g, batch=8))
    assert said is not None and said["kind"] == "regression" and "N x 10 integers: a class per step" in said["why"]


def test_mapped_labels_and_lengths_of_a_large_npz_give_the_same_labels(tmp_path, monkeypatch):
    from revstudio.training import mapped

    labels = _labels()
    lengths = np.arange(N) % STEPS + 1
    whole = _load(tmp_path, labels, lengths=lengths).train.targets
    monkeypatch.setattr(mapped, "MAP_ABOVE", 0)  # (every array of the file mapped, read as used)
    data = _load(tmp_path, labels, lengths=lengths)
    assert isinstance(data.train.inputs["x"], mapped.Mapped)
    assert torch.equal(data.train.targets, whole) and int((whole == -100).sum()) == int((STEPS - lengths).sum())


def test_labels_per_step_for_a_vector_of_class_scores_say_how_to_score_each_step(tmp_path):
    from revstudio.core.generate import sequence_classifier

    with pytest.raises(DataError) as info:
        _load(tmp_path, _labels(), g=sequence_classifier(4, STEPS, K))
    assert "array 'y' has targets of shape 10; classification needs one class index per sample" in str(info.value)
    assert "for a class per step (N x T labels) end the model in C x T scores instead of a vector of 3: a Conv " \
           "with kernel_size 1" in str(info.value)


def test_a_sample_whose_mask_is_all_zero_is_named_by_its_mask(tmp_path):
    mask = np.ones((N, STEPS), bool)
    mask[11] = False
    with pytest.raises(DataError, match=r"sample 11 has no step scored \(its mask is all 0; 1 sample so\)"):
        _load(tmp_path, _labels(), lengths=np.full(N, STEPS), mask=mask)
