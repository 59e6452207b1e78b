"""``--with-training`` for a flow on 8-bit images: the script dequantises as ``revstudio train`` does,
with the same noise, so its loss rows (bits per dimension of the discrete data) are revstudio's."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from codegen_harness import SECTION, loss_rows, run_script, script_rows, trained_here  # noqa: E402
from pixel_kit import actnorm_flow, mnist_folder, random_pixels  # noqa: E402

from revstudio.codegen import export  # noqa: E402


def test_the_script_dequantises_a_flows_8bit_images_as_revstudio_train(tmp_path: Path) -> None:
    train_px, val_px = random_pixels(24, 8)
    mnist_folder(tmp_path / "m", train_px[:, 0], val_px[:, 0])
    g = actnorm_flow({**SECTION, "data": "mnist:m"})
    ours, _ = trained_here(g, tmp_path)
    script = tmp_path / "flat.py"
    script.write_text(export(g, with_training=True), encoding="utf-8")
    proc = run_script(script, ["--json", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = loss_rows(script_rows(proc.stdout))
    assert theirs == ours and len(ours) == 6
    assert all(0 < (r[2] if r[0] == "step" else r[3]) < 16 for r in ours)  # bits of 8-bit data, not below 0
