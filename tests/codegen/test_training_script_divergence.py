"""``--with-training``: the exported script warns of a diverging loss as ``revstudio train`` does.

It stopped on NaN only: SGD at a learning rate far too high took two_branch's loss from 1.4 to
over 1e4 in a few steps, all finite, and the script trained on without a word. It now copies
revstudio.training.divergence's rule (more than 1000 times max(|start|, 1) above the lowest loss
of the first 10 steps), warns once when it happens and again at the end, and keeps the start in
its checkpoint; a healthy run never warns.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codegen_harness import run_script  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.training.divergence import FACTOR, START_STEPS  # noqa: E402

TWO_BRANCH = Path(__file__).resolve().parents[2] / "resources" / "examples" / "two_branch.revs"
COMMON = ["--steps", "8", "--batch-size", "8", "--data", "synthetic", "--schedule", "constant", "--log-every", "1",
          "--val-every", "0", "--checkpoint-every", "0", "--mode", "standard", "--optimizer", "sgd"]
HIGH_LR = ["--lr", "1000"]  # cross-entropy from 1.39 to over 1e4 in three steps, finite throughout


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("diverge") / "two_branch.py"
    path.write_text(export(load(TWO_BRANCH), with_training=True), encoding="utf-8")
    return path


def _first_over(losses: list[float]) -> int | None:
    """The step (1-based) the rule of revstudio.training.divergence first trips on, from the loss rows."""
    for i, loss in enumerate(losses, 1):
        low = min(losses[:min(i, START_STEPS)])
        if loss > low + FACTOR * max(abs(low), 1.0):
            return i
    return None


def test_a_diverging_run_is_warned_of_when_it_happens_and_at_the_end(script: Path) -> None:
    proc = run_script(script, [*COMMON, *HIGH_LR, "--out", "high.pt"], script.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]  # the run goes on, as revstudio train's does
    assert "Traceback" not in proc.stderr
    losses = [float(line.split()[3]) for line in proc.stdout.splitlines() if line.startswith("step ")]
    assert all(math.isfinite(v) for v in losses) and len(losses) == 8
    step = _first_over(losses)
    assert step is not None and step <= 4, losses
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: the loss diverged")]
    assert len(warnings) == 2 and warnings[0] == warnings[1], proc.stderr  # when it happens, and again at the end
    assert f"at step {step}, against 1.386 at the start" in warnings[0], warnings[0]
    assert "--lr (now 1000)" in warnings[0] and "--grad-clip 1.0" in warnings[0] and "The run goes on" in warnings[0]
    state = torch.load(script.parent / "high.pt", weights_only=True)
    kept = state["divergence"]  # a resumed run measures against the same start, as revstudio train's
    assert kept["seen"] == 8 and kept["start"] == pytest.approx(min(losses), rel=1e-6)
    assert kept["warned"]["step"] == step


def test_the_json_rows_carry_one_diverged_row_as_revstudio_train_writes_it(script: Path) -> None:
    proc = run_script(script, [*COMMON, *HIGH_LR, "--json", "--out", "json.pt"], script.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    [row] = [r for r in rows if r.get("event") == "diverged"]
    assert row["kind"] == "event" and row["loss"] > FACTOR * row["start"]
    assert row["message"].startswith("the loss diverged: ") and "--lr (now 1000)" in row["message"]
    steps = [r for r in rows if r["kind"] == "step"]
    assert row["loss"] == pytest.approx(steps[row["step"] - 1]["loss"], rel=1e-6)


def test_a_healthy_run_never_warns(script: Path) -> None:
    proc = run_script(script, [*COMMON, "--lr", "0.05", "--steps", "12", "--out", "ok.pt"], script.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "diverged" not in proc.stderr and "warning" not in proc.stderr, proc.stderr
    assert torch.load(script.parent / "ok.pt", weights_only=True)["divergence"]["warned"] is None
