"""``--with-training`` on class labels per voxel (N x D x H x W for a C x D x H x W Output) with a ``mask``:
the exported script scores the same voxels and trains to the same losses as ``revstudio train``, its rows
and checkpoint's metrics carry ``voxels_scored`` (its metrics kept only steps and pixels), and its start speaks of
voxels."""
from __future__ import annotations

from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")

from codegen_harness import loss_rows, script_and_here, with_section  # noqa: E402

from revstudio.core.generate import volume_segmenter  # noqa: E402

D, H, W = 3, 6, 5


def test_an_exported_script_trains_per_voxel_labels_as_revstudio_train(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, D, H, W)).astype(np.float32)
    y = (x > 0).astype(np.int64)
    mask = rng.random((40, D, H, W)) > 0.3
    y[~mask] = 9  # whatever an unscored voxel holds: never checked
    np.savez(tmp_path / "d.npz", x=x, y=y, mask=mask)
    g = with_section(volume_segmenter(D, H, W, classes=2, hidden=4))
    rows, said, (ours, data) = script_and_here(g, tmp_path, "volumes.py")
    assert loss_rows(rows) == ours and len(ours) == 6 and ours[0][2] is not None
    assert data.task.scored_key == "voxels_scored" and int((data.train.targets == -100).sum()) > 0
    scored = [r["voxels_scored"] for r in rows if r["kind"] == "step"]
    assert scored and all(0 < s < 8 * D * H * W * 10 for s in scored), scored
    assert all(r["val_voxels_scored"] > 0 for r in rows if r["kind"] == "val")
    assert not any("pixels_scored" in r for r in rows)
    kept = torch.load(tmp_path / "ck.pt", weights_only=False)["metrics"]  # (the checkpoint's, as revstudio's)
    assert kept["voxels_scored"] == scored[-1] and kept["val_voxels_scored"] > 0, kept
    assert "labels: d.npz: a class per voxel" in said and "the voxels not scored are still fed to the network" in said
