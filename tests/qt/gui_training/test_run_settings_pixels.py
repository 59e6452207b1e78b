"""Run Settings' data preview for a segmentation set (N x H x W labels): its ``mask`` is named as the
pixels not scored (it said "steps" or "not read"), and a ``lengths`` array, which a run refuses for
labels per pixel, is named with what to save instead."""
from __future__ import annotations


def test_the_preview_names_a_segmentation_sets_mask_as_pixels_not_scored():
    from revstudio.qt.training.section import preview_text

    answer = {"samples": 9, "arrays": {"x": [9, 1, 16, 16], "y": [9, 16, 16], "mask": [9, 16, 16]}, "kind": "npz"}
    text = preview_text(answer, True, ["x"])
    assert text.endswith("; mask: pixels where the mask is 0 are not scored if the labels are a class per pixel "
                         "(loss and accuracy leave them out); they are still fed to the network"), text
    assert "not read" not in text and "steps" not in text
    both = preview_text({**answer, "arrays": {**answer["arrays"], "lengths": [9]}}, True, ["x"])
    assert "; lengths: refused if the labels are a class per pixel (it gives sequence lengths): mark pixels not " \
           "scored with -100 or an N x H x W 'mask'" in both and "not read" not in both
    flat = preview_text({**answer, "arrays": {"x": [9, 1, 16, 16], "y": [9], "mask": [9, 16, 16]}}, True, ["x"])
    assert "not read: mask" in flat and "a 'mask' also for N x H x W labels of a class per pixel" in flat


def test_the_preview_names_a_volume_sets_mask_and_lengths_in_voxels():
    from revstudio.qt.training.section import preview_text

    answer = {"samples": 9, "arrays": {"x": [9, 4, 8, 8], "y": [9, 4, 8, 8], "mask": [9, 4, 8, 8], "lengths": [9]},
              "kind": "npz"}
    text = preview_text(answer, True, ["x"])
    assert "; lengths: refused if the labels are a class per voxel (it gives sequence lengths): mark voxels not " \
           "scored with -100 or an N x D x H x W 'mask'" in text, text
    assert "; mask: voxels where the mask is 0 are not scored if the labels are a class per voxel" in text
    assert "pixel" not in text
