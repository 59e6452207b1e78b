"""``--with-training`` on a .npz of uint8 images: the script scales them to [0, 1] (and a flow
dequantises them) as ``revstudio train`` does, says so, keeps them raw with ``--no-scale-uint8``,
and refuses to resume a checkpoint at the other scale."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from codegen_harness import SECTION, loss_rows, run_script, script_rows, trained_here  # noqa: E402
from pixel_kit import actnorm_flow, random_pixels, write_uint8_npz  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.training.data import load_data  # noqa: E402
from revstudio.training.task import infer_task  # noqa: E402


def _ours(g: Any, folder: Path, scale: bool) -> list[tuple[Any, ...]]:
    losses, data = trained_here(g, folder, scale_uint8=scale)
    assert (data.levels == 256) is scale  # raw bytes: modelled as given
    return losses


def _theirs(stdout: str) -> list[tuple[Any, ...]]:
    return loss_rows(script_rows(stdout))


def test_the_script_scales_uint8_images_as_revstudio_train_and_refuses_a_resume_at_the_other_scale(
        tmp_path: Path) -> None:
    write_uint8_npz(tmp_path / "d.npz", *random_pixels(24))
    g = actnorm_flow(SECTION)
    script = tmp_path / "flat.py"
    script.write_text(export(g, with_training=True), encoding="utf-8")
    proc = run_script(script, ["--json", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "note: inputs: uint8 scaled to [0, 1] (x: k / 255" in proc.stderr
    ours = _ours(g, tmp_path, True)
    assert _theirs(proc.stdout) == ours and len(ours) == 6
    assert all(0 < (r[2] if r[0] == "step" else r[3]) < 16 for r in ours)  # bits of 8-bit data
    raw = run_script(script, ["--json", "--out", "raw.pt", "--no-scale-uint8"], tmp_path)
    assert raw.returncode == 0, raw.stderr[-3000:]
    assert "note: inputs: uint8 kept raw 0..255 (x; scale_uint8 false)" in raw.stderr
    assert _theirs(raw.stdout) == _ours(g, tmp_path, False)
    again = run_script(script, ["--out", "more.pt", "--steps", "6", "--resume", "ck.pt", "--no-scale-uint8"], tmp_path)
    assert again.returncode == 2
    assert ("--resume ck.pt: the run trained on its uint8 inputs scaled to [0, 1], these options feed them raw "
            "0..255; its weights learned the other scale: resume with --scale-uint8") in again.stderr
    assert run_script(script, ["--out", "more.pt", "--steps", "6", "--resume", "ck.pt"], tmp_path).returncode == 0


def test_the_scripts_words_on_8bit_inputs_are_revstudios(tmp_path: Path) -> None:
    import runpy

    g = actnorm_flow(SECTION)
    script = tmp_path / "flat.py"
    script.write_text(export(g, with_training=True), encoding="utf-8")
    defs = runpy.run_path(str(script))  # defines, runs nothing (no __main__)
    report = full_check(g, batch=8)
    pixels = np.random.default_rng(0).integers(0, 256, (24, 1, 4, 4))
    for name, values, scale in [("u.npz", pixels.astype(np.uint8), True), ("r.npz", pixels.astype(np.uint8), False),
                                ("f.npz", pixels.astype(np.float32), True)]:
        np.savez(tmp_path / name, x=values)
        facts: dict[str, Any] = {}
        defs["load_training_data"]({**defs["TRAINING"], "data": name, "scale_uint8": scale}, str(tmp_path), facts)
        ours = load_data(name, g, report, task=infer_task(g, report), base_dir=str(tmp_path), scale_uint8=scale)
        assert defs["uint8_note"](facts) == ours.inputs_note() is not None
