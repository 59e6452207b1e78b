"""``--with-training`` on a large uncompressed .npz: the script carries ``training.mapped`` with the
data code, maps the file's arrays as ``revstudio train`` does and trains on them to the same losses
as on the file read whole (the script's ``MAP_ABOVE`` lowered so a small file is mapped)."""
from __future__ import annotations

import runpy
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from codegen_harness import loss_rows, run_script, script_rows, trained_here, with_section  # noqa: E402
from pixel_kit import random_pixels, write_uint8_npz  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.core.generate import flat_classifier  # noqa: E402
from revstudio.training import mapped  # noqa: E402


def test_an_exported_script_trains_on_a_mapped_npz_as_revstudio_train(tmp_path: Path, monkeypatch) -> None:
    write_uint8_npz(tmp_path / "d.npz", *random_pixels(40), classes=5)
    g = with_section(flat_classifier((1, 4, 4), classes=5, name="img"))
    text = export(g, with_training=True)
    assert "\nMAP_ABOVE = 256 * 2**20\n" in text and "\nclass Mapped:" in text
    script = tmp_path / "img.py"
    script.write_text(text.replace("\nMAP_ABOVE = 256 * 2**20\n", "\nMAP_ABOVE = 0\n"), encoding="utf-8")
    defs = runpy.run_path(str(script))  # defines, runs nothing (no __main__)
    assert isinstance(defs["load_arrays"](str(tmp_path / "d.npz"))["x"], defs["Mapped"])  # the script maps it
    proc = run_script(script, ["--json", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = loss_rows(script_rows(proc.stdout))
    whole, _ = trained_here(g, tmp_path)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 0)
    ours, data = trained_here(g, tmp_path)  # revstudio train on the mapped file: the same run
    assert isinstance(data.train.inputs["x"], mapped.Mapped)
    assert theirs == whole == ours and len(ours) == 6


@pytest.mark.parametrize("compressed", [False, True])
def test_the_exported_script_says_mapped_or_read_whole_in_revstudio_trains_words(tmp_path: Path, monkeypatch,
                                                                                compressed: bool) -> None:
    rng = np.random.default_rng(1)
    save = np.savez_compressed if compressed else np.savez
    save(tmp_path / "d.npz", x=rng.random((40, 1, 4, 4)).astype(np.float32), y=np.arange(40) % 5)
    g = with_section(flat_classifier((1, 4, 4), classes=5, name="img"))
    script = tmp_path / "img.py"
    script.write_text(export(g, with_training=True).replace("\nMAP_ABOVE = 256 * 2**20\n", "\nMAP_ABOVE = 0\n"),
                      encoding="utf-8")
    proc = run_script(script, ["--steps", "1", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = [line for line in proc.stderr.splitlines() if line.startswith("data: ")]
    monkeypatch.setattr(mapped, "MAP_ABOVE", 0)
    _, data = trained_here(g, tmp_path)  # revstudio train's start prints "data: " + describe()
    expected = "read whole" if compressed else "x, y mapped (read as used)"
    assert said == [f"data: d.npz: 36 train / 4 val, {expected}"]
    assert data.describe() == f"d.npz: 36 train / 4 val, x 1x4x4, 5 classes, {expected}"
