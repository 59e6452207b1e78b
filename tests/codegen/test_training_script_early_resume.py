"""The exported training script's ``--resume`` of a checkpoint that stopped early: refused in ``revstudio
train --resume``'s words (exit 2), and trained on with a larger ``--patience`` (the count going on) or
``--patience none``."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codegen_harness import run_script, script_rows, with_section  # noqa: E402

from revstudio.core import generate  # noqa: E402


def test_the_script_refuses_to_resume_a_run_that_stopped_early_and_trains_on_when_told(tmp_path: Path) -> None:
    from revstudio.codegen import export

    graph = with_section(generate.revnet_chain(1, channels=4, size=4, wired=True), data="synthetic", steps=12,
                         patience=2, min_delta=1000.0)
    script = tmp_path / "early.py"
    script.write_text(export(graph, with_training=True), encoding="utf-8")
    proc = run_script(script, ["--json", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    saved = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert saved["step"] == 6 and saved["patience"]["waited"] == 2  # (validations at 2, 4, 6)
    best = saved["best"]
    proc = run_script(script, ["--out", "ck.pt", "--resume", "ck.pt"], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert (f"--resume ck.pt: the run stopped early at step 6 (best at {best['step']}, val_loss "
            f"{best['val_loss']:.4g}): val_loss has not improved for 2 validations in a row, and its patience is 2; "
            "to train on, give a larger --patience (the count of 2 goes on: --patience M stops once M validations "
            "in a row have not improved) or --patience none to turn early stopping off") in proc.stderr, proc.stderr
    shutil.copy(tmp_path / "ck.pt", tmp_path / "off.pt")
    proc = run_script(script, ["--json", "--out", "ck.pt", "--resume", "ck.pt", "--patience", "3"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [r["step"] for r in script_rows(proc.stdout) if r["kind"] == "val"] == [8]  # the third in a row
    assert torch.load(tmp_path / "ck.pt", weights_only=True)["patience"]["waited"] == 3
    assert "stopped early at step 8" in proc.stderr
    proc = run_script(script, ["--json", "--out", "off.pt", "--resume", "off.pt", "--patience", "none"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [r["step"] for r in script_rows(proc.stdout) if r["kind"] == "val"] == [8, 10, 12]
    assert torch.load(tmp_path / "off.pt", weights_only=True)["step"] == 12 and "stopped early" not in proc.stderr


def test_a_run_that_did_not_stop_early_resumed_with_a_smaller_patience_is_told_so(tmp_path: Path) -> None:
    """A run that ended its steps without early stopping, resumed for more steps with a patience its count
    already reached, was refused as if it had "stopped early at step 6"."""
    from revstudio.codegen import export

    graph = with_section(generate.revnet_chain(1, channels=4, size=4, wired=True), data="synthetic", steps=6,
                         min_delta=1000.0)
    script = tmp_path / "plain.py"
    script.write_text(export(graph, with_training=True), encoding="utf-8")
    proc = run_script(script, ["--json", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    saved = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert saved["step"] == 6 and saved["patience"]["waited"] == 2 and "stopped early" not in proc.stderr
    best = saved["best"]
    proc = run_script(script, ["--out", "ck.pt", "--resume", "ck.pt", "--steps", "12", "--patience", "2"], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert (f"--resume ck.pt: the run did not stop early, but at step 6 (best at {best['step']}, val_loss "
            f"{best['val_loss']:.4g}) val_loss has not improved for 2 validations in a row, which already reaches "
            "the patience of 2 given now: it would stop at its next validation; to train on, give a larger "
            "--patience (the count of 2 goes on") in proc.stderr, proc.stderr
    assert "stopped early" not in proc.stderr
    proc = run_script(script, ["--json", "--out", "ck.pt", "--resume", "ck.pt", "--steps", "12", "--patience", "3"],
                      tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [r["step"] for r in script_rows(proc.stdout) if r["kind"] == "val"] == [8]
    assert "stopped early at step 8" in proc.stderr
