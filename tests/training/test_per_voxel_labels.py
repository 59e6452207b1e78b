"""Class labels per voxel (N x D x H x W class indices for a C x D x H x W Output, as a Reshape after a Conv
head gives it) and per position of more axes: the same cross-entropy over the scored positions as per pixel,
worded by the labels' rank. They trained, but every message and row called them pixels (``pixels_scored``,
"a class per pixel", an "N x H x W x D" mask): now "voxel" for three axes (``voxels_scored``) and "position"
beyond (``positions_scored``); -100, a ``mask`` and a refused ``lengths`` behave as for pixels."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from revstudio.core.generate import volume_segmenter
from revstudio.core.graph import Graph
from revstudio.diagnostics.check import full_check
from revstudio.training.data import DataError, load_data
from revstudio.training.parts import Loss
from revstudio.training.task import infer_task

K, D, H, W, N = 3, 4, 6, 5, 12


def _x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((N, D, H, W)).astype(np.float32)


def _labels() -> np.ndarray:
    return np.random.default_rng(1).integers(0, K, (N, D, H, W))


def _load(tmp_path: Path, y: np.ndarray, requested: str = "auto", g: Graph | None = None, **arrays: np.ndarray):
    g = g or volume_segmenter(D, H, W, classes=K)
    np.savez(tmp_path / "vol.npz", x=_x(), y=y, **arrays)
    report = full_check(g, batch=4)
    return load_data("vol.npz", g, report, task=infer_task(g, report, requested), base_dir=str(tmp_path),
                     val_fraction=0.0)


@pytest.mark.parametrize("requested", ["auto", "classification"])
def test_integer_labels_per_voxel_are_classification_per_voxel(tmp_path, requested):
    labels = _labels()
    data = _load(tmp_path, labels, requested)
    assert data.task.kind == "classification" and data.task.per_step and data.task.num_classes == K
    assert data.task.unit == "voxel" and data.task.scored_key == "voxels_scored"
    assert torch.equal(data.train.targets, torch.from_numpy(labels))
    assert "classification per voxel (3 classes x 4x6x5 voxels" in data.task.describe()
    assert "masked voxels not scored" in data.task.describe()
    assert data.describe().endswith("3 classes per voxel")
    note = data.inputs_note()
    assert note is not None and f"a class per voxel; loss and accuracy count the {N * D * H * W} scored voxels" in note


def test_a_mask_and_labels_of_minus_100_leave_voxels_out_of_the_loss_and_the_accuracy(tmp_path):
    labels = _labels()
    labels[:, 0] = 7  # the first slice unlabelled: whatever it holds is never checked, never scored
    mask = np.ones((N, D, H, W), bool)
    mask[:, 0] = False
    labels[0, 2, 3, 3] = -100
    data = _load(tmp_path, labels, mask=mask)
    y = data.train.targets
    assert bool((y[:, 0] == -100).all()) and int(y[0, 2, 3, 3]) == -100
    scored = N * D * H * W - N * H * W - 1
    note = data.inputs_note()
    assert f"{scored} scored voxels of {N * D * H * W} ('mask' and labels of -100 mark the rest)" in note
    assert "the voxels not scored are still fed to the network" in note and "pixel" not in note
    loss_fn = Loss("classification")
    scores = torch.randn(N, K, D, H, W)
    loss, correct = loss_fn(scores, y, None)
    keep = y != -100
    want = torch.nn.functional.cross_entropy(scores.permute(0, 2, 3, 4, 1)[keep], y[keep])
    assert torch.allclose(loss, want) and loss_fn.counted(y, N) == scored
    assert int(correct) == int((scores.argmax(1)[keep] == y[keep]).sum())


def test_bad_labels_masks_and_lengths_are_refused_naming_the_sample_and_voxel(tmp_path):
    labels = _labels()
    labels[4, 1, 2, 3] = 5
    with pytest.raises(DataError, match=r"the label 5 at sample 4, voxel \(1, 2, 3\); per-voxel labels are class "
                                        r"indices 0..2 \(Output 'seg' reads 3 scores a voxel\).*give node 'scores' 6"):
        _load(tmp_path, labels)
    labels = _labels()
    labels[1, 0, 0, 0] = -1
    with pytest.raises(DataError, match=r"label -1 at sample 1, voxel \(0, 0, 0\).*mark voxels not scored with -100 "
                                        r"\(torch's ignore_index\), or save an N x 4x6x5 'mask'"):
        _load(tmp_path, labels)
    with pytest.raises(DataError, match=r"array 'mask' has shape 12x4x6; it marks each voxel of each sample scored "
                                        r"\(1\) or not scored \(0\): save an N x D x H x W array of 12 x 4 x 6 x 5"):
        _load(tmp_path, _labels(), mask=np.ones((N, D, H)))
    with pytest.raises(DataError, match=r"the labels are 4x6x5 per sample \(a class per voxel\): mark the voxels "
                                        r"not scored with -100 or an N x 4x6x5 'mask'"):
        _load(tmp_path, _labels(), lengths=np.full(N, W))
    mask = np.ones((N, D, H, W))
    mask[2] = 0
    with pytest.raises(DataError, match=r"sample 2 has no voxel scored \(its mask is all 0"):
        _load(tmp_path, _labels(), mask=mask)


def test_labels_of_another_layout_are_refused_in_voxel_words(tmp_path):
    with pytest.raises(DataError, match=r"reads 3x4x6x5 per sample \(3 classes x 4x6x5 voxels\) and the labels are "
                                        r"4x5x6: per-voxel labels are N x 4x6x5 for a C x 4x6x5 Output; give the Input "
                                        r"4x5x6 volumes"):
        _load(tmp_path, _labels().transpose(0, 1, 3, 2))
    last = volume_segmenter(D, H, W, classes=K)  # scores channels last: D x H x W x C
    last.node("scores").params["shape"] = [D, H, W, K]
    with pytest.raises(DataError, match=r"reads 4x6x5x3 per sample and the labels are 4x6x5: the scores are 4x6x5 x "
                                        r"classes \(channels last\), and per-voxel classification reads them channels "
                                        r"first, classes x 4x6x5 \(N x C x D x H x W"):
        _load(tmp_path, _labels(), "classification", last)


def test_four_label_axes_are_a_class_per_position():
    # (no node makes a 5-axis Output today, a Reshape takes 4 sizes: the labels' words are checked on the code)
    from revstudio.training.steps import per_step_targets

    labels = torch.from_numpy(_labels().reshape(N, 2, 2, H, W))
    labels[:, 0, 0] = -100
    y, facts = per_step_targets(labels, N, num_classes=K, out_shape=(K, 2, 2, H, W), output_id="seg",
                                head="head", source="v.npz")
    assert torch.equal(y, labels) and facts["unit"] == "position" and facts["scored"] == N * 3 * H * W
    with pytest.raises(DataError, match=r"array 'mask' has shape 12x2; it marks each position .* save an N x "
                                        r"2x2x6x5 array"):
        per_step_targets(labels, N, num_classes=K, out_shape=(K, 2, 2, H, W), output_id="seg", head="head",
                         source="v.npz", padding={"mask": torch.ones(N, 2)})
    labels[3, 1, 0, 2, 2] = 9
    with pytest.raises(DataError, match=r"the label 9 at sample 3, position \(1, 0, 2, 2\); per-position labels"):
        per_step_targets(labels, N, num_classes=K, out_shape=(K, 2, 2, H, W), output_id="seg", head="head",
                         source="v.npz")


def test_synthetic_data_gives_a_class_per_voxel_under_task_classification():
    g = volume_segmenter(D, H, W, classes=K)
    report = full_check(g, batch=4)
    data = load_data("synthetic", g, report, task=infer_task(g, report, "classification"), val_fraction=0.0)
    y = data.train.targets
    assert tuple(y.shape[1:]) == (D, H, W) and data.task.scored_key == "voxels_scored"
    assert set(y.unique().tolist()) == set(range(K))
