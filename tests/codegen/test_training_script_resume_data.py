"""An exported script resumed on other data says so, in ``revstudio train --resume``'s words.

Its checkpoint kept the data's digest, yet a resume on a rewritten data file went on without a
word, where ``revstudio train --resume`` printed a ``note:``."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from codegen_harness import run_script  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.core.generate import flat_classifier  # noqa: E402
from revstudio.training.checkpoint import data_changed_note  # noqa: E402

COMMON = ["--data", "d.npz", "--batch-size", "8", "--device", "cpu", "--val-fraction", "0.1",
          "--checkpoint-every", "0"]


def _script(folder: Path) -> Path:
    """The exported training script of a 4-feature, 3-class classifier, in ``folder``."""
    path = folder / "train_model.py"
    path.write_text(export(flat_classifier([4], classes=3, name="clf"), with_training=True), encoding="utf-8")
    return path


def _data(path: Path, n: int, scale: float = 1.0) -> None:
    rng = np.random.default_rng(0)
    np.savez(path, x=(rng.normal(size=(n, 4)) * scale).astype("float32"), y=rng.integers(0, 3, n))


def test_a_resumed_script_says_when_its_data_are_not_those_of_the_checkpoint(tmp_path: Path) -> None:
    path = _script(tmp_path)
    _data(tmp_path / "d.npz", 40)
    first = run_script(path, [*COMMON, "--steps", "1", "--out", "a.pt"], tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    same = run_script(path, [*COMMON, "--steps", "2", "--resume", "a.pt", "--out", "b.pt"], tmp_path)
    assert same.returncode == 0 and "note: the data" not in same.stderr, same.stderr[-3000:]
    _data(tmp_path / "d.npz", 40, scale=2.0)  # the same sizes, other values
    other = run_script(path, [*COMMON, "--steps", "3", "--resume", "b.pt", "--out", "c.pt", "--json"], tmp_path)
    assert other.returncode == 0, other.stderr[-3000:]
    line = "d.npz: 36 train / 4 val"
    assert f"note: {data_changed_note([line, line + ' (the same sizes, other values)'])}\n" in other.stderr


def test_a_resumed_script_that_stretches_its_schedule_says_so_in_revstudios_words(tmp_path: Path) -> None:
    """--steps 4 then --resume with --steps 8 re-planned a cosine schedule without a word, in the script as in
    revstudio train; both now print the same note."""
    from revstudio.training.checkpoint import schedule_note

    path = _script(tmp_path)
    _data(tmp_path / "d.npz", 40)
    cosine = [*COMMON, "--schedule", "cosine", "--lr", "0.01"]
    first = run_script(path, [*cosine, "--steps", "4", "--out", "a.pt"], tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    longer = run_script(path, [*cosine, "--steps", "8", "--resume", "a.pt", "--out", "b.pt"], tmp_path)
    assert longer.returncode == 0, longer.stderr[-3000:]
    saved = {"schedule": "cosine", "steps": 4, "epochs": None, "lr": 0.01}
    assert f"note: {schedule_note(saved, 4, 'cosine', 0, 0.01, 8, 4)}\n" in longer.stderr, longer.stderr
    assert "step 5 trains at lr 0.005 where the 4-step schedule had it at 0" in longer.stderr
