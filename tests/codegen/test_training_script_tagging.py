"""``--with-training`` on class labels per step (sequence tagging) padded past ``lengths``: the exported
script reads the lengths, scores the same steps and trains to the same losses, accuracies and
``steps_scored`` as ``revstudio train``, and its start says the padded steps are still fed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("torch")

from codegen_harness import loss_rows, run_script, script_and_here, script_rows, with_section  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.core.generate import sequence_tagger  # noqa: E402

STEPS = 10


def _padded_tags(folder: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 4, STEPS)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    lengths = rng.integers(2, STEPS + 1, 40)
    y[np.arange(STEPS)[None, :] >= lengths[:, None]] = -1  # padding: not scored, never checked
    np.savez(folder / "d.npz", x=x, y=y, lengths=lengths)


def test_an_exported_script_trains_per_step_labels_as_revstudio_train(tmp_path: Path) -> None:
    _padded_tags(tmp_path)
    g = with_section(sequence_tagger(4, STEPS, 2))
    rows, said, (ours, data) = script_and_here(g, tmp_path, "tagger.py")
    assert loss_rows(rows) == ours and len(ours) == 6
    assert data.task.per_step and int((data.train.targets == -100).sum()) > 0
    scored = [r["steps_scored"] for r in rows if r["kind"] == "step"]
    assert all(0 < s < 8 * STEPS for s in scored), scored
    assert all(r["val_steps_scored"] > 0 for r in rows if r["kind"] == "val")
    assert "labels: d.npz: a class per step" in said
    assert "padded steps are still fed to the network" in said


def test_under_torchrun_the_script_optimises_the_global_batchs_scored_steps(tmp_path: Path) -> None:
    """The ranks score different numbers of steps: each rank's mean is weighed so that DDP's average of
    the gradients is one process's, which a plain average of the ranks' means missed by 1e-5."""
    _padded_tags(tmp_path)
    script = tmp_path / "tagger.py"
    script.write_text(export(with_section(sequence_tagger(4, STEPS, 2)), with_training=True), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["OMP_NUM_THREADS"] = "1"
    common = ["--optimizer", "sgd", "--lr", "0.05", "--val-every", "0", "--json"]
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          str(script), *common, "--out", "two.pt"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=240)
    assert two.returncode == 0, (two.stdout + two.stderr)[-3000:]
    one = run_script(script, [*common, "--out", "one.pt"], tmp_path)
    assert one.returncode == 0, one.stderr[-3000:]
    rows = [(r["loss"], r["steps_scored"]) for r in script_rows(two.stdout) if r["kind"] == "step"]
    alone = [(r["loss"], r["steps_scored"]) for r in script_rows(one.stdout) if r["kind"] == "step"]
    assert [s for _, s in rows] == [s for _, s in alone] and len(rows) == 4, (two.stdout[-2000:], one.stdout[-2000:])
    assert [loss for loss, _ in rows] == pytest.approx([loss for loss, _ in alone], rel=1e-6)
