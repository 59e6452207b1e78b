"""``--with-training`` on class labels per pixel (segmentation) with a ``mask``: the exported script reads
the mask, scores the same pixels and trains to the same losses and ``pixels_scored`` as ``revstudio
train`` (its first loss included), and its start says the unscored pixels are still fed."""
from __future__ import annotations

from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("torch")

from codegen_harness import loss_rows, script_and_here, with_section  # noqa: E402

from revstudio.core.generate import segmenter  # noqa: E402

H, W = 6, 5


def _masked_shapes(folder: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 2, H, W)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 1).astype(np.int64)
    mask = rng.random((40, H, W)) > 0.3
    y[~mask] = 9  # whatever an unscored pixel holds: never checked
    np.savez(folder / "d.npz", x=x, y=y, mask=mask)


def test_an_exported_script_trains_per_pixel_labels_as_revstudio_train(tmp_path: Path) -> None:
    _masked_shapes(tmp_path)
    g = with_section(segmenter(2, H, W, classes=3, hidden=4))
    rows, said, (ours, data) = script_and_here(g, tmp_path, "segmenter.py")
    assert loss_rows(rows) == ours and len(ours) == 6 and ours[0][2] is not None
    assert data.task.scored_key == "pixels_scored" and int((data.train.targets == -100).sum()) > 0
    scored = [r["pixels_scored"] for r in rows if r["kind"] == "step"]
    assert all(0 < s < 8 * H * W for s in scored), scored
    assert all(r["val_pixels_scored"] > 0 for r in rows if r["kind"] == "val")
    assert "labels: d.npz: a class per pixel" in said
    assert "the pixels not scored are still fed to the network" in said
