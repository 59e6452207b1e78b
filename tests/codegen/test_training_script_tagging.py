"""``--with-training`` on class labels per step (sequence tagging) padded past ``lengths``: the exported
script reads the lengths, scores the same steps and trains to the same losses, accuracies and
``steps_scored`` as ``revstudio train``, and its start says the padded steps are still fed."""
from __future__ import annotations

from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("torch")

from codegen_harness import loss_rows, run_script, script_rows, trained_here, with_section  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.core.generate import sequence_tagger  # noqa: E402

STEPS = 10


def test_an_exported_script_trains_per_step_labels_as_revstudio_train(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 4, STEPS)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    lengths = rng.integers(2, STEPS + 1, 40)
    y[np.arange(STEPS)[None, :] >= lengths[:, None]] = -1  # padding: not scored, never checked
    np.savez(tmp_path / "d.npz", x=x, y=y, lengths=lengths)
    g = with_section(sequence_tagger(4, STEPS, 2))
    script = tmp_path / "tagger.py"
    script.write_text(export(g, with_training=True), encoding="utf-8")
    proc = run_script(script, ["--json", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = script_rows(proc.stdout)
    ours, data = trained_here(g, tmp_path)
    assert loss_rows(rows) == ours and len(ours) == 6
    assert data.task.per_step and int((data.train.targets == -100).sum()) > 0
    scored = [r["steps_scored"] for r in rows if r["kind"] == "step"]
    assert all(0 < s < 8 * STEPS for s in scored), scored
    assert all(r["val_steps_scored"] > 0 for r in rows if r["kind"] == "val")
    assert "labels: d.npz: a class per step" in proc.stderr + proc.stdout
    assert "padded steps are still fed to the network" in proc.stderr + proc.stdout
