"""The exported training script's early stopping (``patience``, ``min_delta``) and gradient accumulation
(``accumulate``): it stops at the step ``revstudio train`` stops at and trains as it does, row for row."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codegen_harness import loss_rows, script_and_here, with_section  # noqa: E402

from revstudio.core import generate  # noqa: E402


def test_the_script_stops_early_where_revstudio_train_does(tmp_path: Path) -> None:
    graph = with_section(generate.revnet_chain(1, channels=4, size=4, wired=True), data="synthetic", steps=40,
                         patience=2, min_delta=1000.0)
    rows, said, (here, _) = script_and_here(graph, tmp_path, "early.py")
    assert loss_rows(rows) == here  # the same losses, bit for bit, and the same last step
    assert [r[1] for r in here if r[0] == "val"] == [2, 4, 6]  # improved once, then 2 validations without
    saved = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert saved["step"] == 6 and saved["patience"]["waited"] == 2
    best = torch.load(tmp_path / "ck.best.pt", weights_only=True)["best"]
    assert (f"stopped early at step 6: val_loss has not improved by more than 1000 for 2 validations in a row; "
            f"the best weights (step {best['step']}, val_loss {best['val_loss']:.4g}) are in ck.best.pt") in said


def test_the_script_accumulates_micro_batches_as_revstudio_train_does(tmp_path: Path) -> None:
    graph = with_section(generate.revnet_chain(1, channels=4, size=4, wired=True), data="synthetic", steps=5,
                         batch_size=4, accumulate=3, val_every=2)
    rows, _, (here, data) = script_and_here(graph, tmp_path, "accumulate.py")
    assert loss_rows(rows) == here  # bit for bit: the same micro-batches, summed the same way
    steps = [r for r in rows if r["kind"] == "step"]
    per_epoch = len(data.train) // 12  # (4 x 3 samples a step)
    assert [r["epoch"] for r in steps] == [round(s / per_epoch, 4) for s in range(1, 6)]


@pytest.mark.parametrize(("flags", "words"), [
    (["--accumulate", "0"], "--accumulate 0 is too small; use at least 1 micro-batch"),
    (["--patience", "0"], "--patience 0 is too small"),
    (["--patience", "2", "--val-every", "0"], "--patience: early stopping counts validations"),
    (["--min-delta", "-1"], "--min-delta -1.0 is out of range"),
])
def test_the_script_refuses_bad_values_naming_the_option(tmp_path: Path, flags: list[str], words: str) -> None:
    from codegen_harness import run_script

    from revstudio.codegen import export

    script = tmp_path / "bad.py"
    script.write_text(export(with_section(generate.revnet_chain(1, channels=4, size=4, wired=True),
                                          data="synthetic"), with_training=True), encoding="utf-8")
    proc = run_script(script, flags, tmp_path)
    assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
