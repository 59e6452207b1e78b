"""Class labels per pixel (segmentation): N x H x W class indices for a C x H x W Output (channels first)
train with cross-entropy over the pixels, as per-step labels do over steps (one implementation, worded by
the labels' rank). They were refused as "classes per position over more than one axis" with a reshape
hint. Pixels of -100 or where a file's ``mask`` is 0 are not scored; bad labels, masks, ``lengths`` and
layouts are refused naming the Output port, the shapes and the fix."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from labels_kit import load_labelled

from revstudio.core.generate import segmenter
from revstudio.core.graph import Graph
from revstudio.diagnostics.check import full_check
from revstudio.training.data import DataError, load_data
from revstudio.training.parts import Loss
from revstudio.training.task import infer_task

K, H, W, N = 3, 6, 5, 12


def _x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((N, 2, H, W)).astype(np.float32)


def _labels() -> np.ndarray:
    return np.random.default_rng(1).integers(0, K, (N, H, W))


def _load(tmp_path: Path, y: np.ndarray, requested: str = "auto", g: Graph | None = None, **arrays: np.ndarray):
    return load_labelled(tmp_path, "seg.npz", g or segmenter(2, H, W, classes=K), _x(), y, requested, 4, **arrays)


@pytest.mark.parametrize("requested", ["auto", "classification"])
def test_integer_labels_per_pixel_are_classification_per_pixel(tmp_path, requested):
    labels = _labels()
    data = _load(tmp_path, labels, requested)
    assert data.task.kind == "classification" and data.task.per_step and data.task.num_classes == K
    assert data.task.unit == "pixel" and data.task.scored_key == "pixels_scored"
    assert torch.equal(data.train.targets, torch.from_numpy(labels))
    assert "classification per pixel (3 classes x 6x5 pixels" in data.task.describe()
    assert data.describe().endswith("3 classes per pixel")
    note = data.inputs_note()
    assert note is not None and f"a class per pixel; loss and accuracy count the {N * H * W} scored pixels" in note


def test_a_mask_and_labels_of_minus_100_leave_pixels_out_of_the_loss_and_the_accuracy(tmp_path):
    labels = _labels()
    labels[:, 0, :] = 7  # whatever an unlabelled pixel holds: never checked, never scored
    mask = np.ones((N, H, W), bool)
    mask[:, 0, :] = False
    labels[0, 3, 3] = -100
    data = _load(tmp_path, labels, mask=mask)
    y = data.train.targets
    assert bool((y[:, 0, :] == -100).all()) and int(y[0, 3, 3]) == -100
    scored = N * H * W - N * W - 1
    note = data.inputs_note()
    assert f"{scored} scored pixels of {N * H * W} ('mask' and labels of -100 mark the rest)" in note
    assert "the pixels not scored are still fed to the network" in note and "not read" not in note
    loss_fn = Loss("classification")
    scores = torch.randn(N, K, H, W)
    loss, correct = loss_fn(scores, y, None)
    keep = y != -100
    want = torch.nn.functional.cross_entropy(scores.permute(0, 2, 3, 1)[keep], y[keep])
    assert torch.allclose(loss, want) and loss_fn.counted(y, N) == scored
    assert int(correct) == int((scores.argmax(1)[keep] == y[keep]).sum())


def test_bad_labels_and_masks_are_refused_naming_the_sample_and_pixel(tmp_path):
    labels = _labels()
    labels[4, 2, 3] = 5
    with pytest.raises(DataError, match=r"the label 5 at sample 4, pixel \(2, 3\); per-pixel labels are class "
                                        r"indices 0..2 \(Output 'seg' reads 3 scores a pixel\).*give node 'head' 6"):
        _load(tmp_path, labels)
    labels = _labels()
    labels[1, 0, 0] = -1
    with pytest.raises(DataError, match=r"label -1 at sample 1, pixel \(0, 0\).*mark pixels not scored with -100"):
        _load(tmp_path, labels)
    with pytest.raises(DataError, match=r"array 'mask' has shape 12x6; .*save an N x H x W array of 12 x 6 x 5"):
        _load(tmp_path, _labels(), mask=np.ones((N, H)))
    with pytest.raises(DataError, match=r"array 'lengths' gives each sequence's length, and the labels are 6x5 per "
                                        r"sample \(a class per pixel\): mark the pixels not scored with -100 or"):
        _load(tmp_path, _labels(), lengths=np.full(N, W))
    mask = np.ones((N, H, W))
    mask[2] = 0
    with pytest.raises(DataError, match=r"sample 2 has no pixel scored \(its mask is all 0"):
        _load(tmp_path, _labels(), mask=mask)


def test_labels_of_another_layout_are_refused_naming_the_port_the_shapes_and_the_fix(tmp_path):
    with pytest.raises(DataError, match=r"holds 5x6 labels a sample: Output 'seg' \(port 'seg.in'\) reads 3x6x5 "
                                        r"per sample .* per-pixel labels are N x 6x5 for a C x 6x5 Output"):
        _load(tmp_path, _labels().transpose(0, 2, 1))
    last = Graph("last")  # scores channels last: H x W x C (a Permute after the head)
    last.add_node("Input", "x", {"shape": [2, H, W]})
    last.add_node("Conv", "head", {"out_channels": 4, "kernel_size": 1})
    last.add_node("Permute", "hwc", {"kind": "axes", "dims": [1, 2, 0]})
    last.add_node("Output", "seg")
    last.connect("x.out", "head.in")
    last.connect("head.out", "hwc.in")
    last.connect("hwc.out", "seg.in")
    labels = np.random.default_rng(1).integers(0, 4, (N, H, W))
    with pytest.raises(DataError, match=r"reads 6x5x4 per sample and the labels are 6x5: the scores are 6x5 x classes "
                                        r"\(channels last\).*end the model in a Conv with kernel_size 1"):
        _load(tmp_path, labels, "classification", last)


def test_a_class_a_sample_for_a_per_pixel_output_is_refused_naming_the_labels_it_needs(tmp_path):
    with pytest.raises(DataError, match=r"Output 'seg' \(port 'seg.in'\) reads 3x6x5 scores \(classes x pixels\): "
                                        r"per-pixel classification needs labels of N x 6x5"):
        _load(tmp_path, np.arange(N) % K, "classification")


def test_synthetic_data_gives_a_class_per_pixel_under_task_classification():
    g = segmenter(2, H, W, classes=K)
    report = full_check(g, batch=4)
    data = load_data("synthetic", g, report, task=infer_task(g, report, "classification"), val_fraction=0.0)
    y = data.train.targets
    assert tuple(y.shape[1:]) == (H, W) and data.task.scored_key == "pixels_scored"
    assert set(y.unique().tolist()) == set(range(K))
