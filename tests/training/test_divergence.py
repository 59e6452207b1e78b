"""A loss that grows by orders of magnitude while staying finite is reported (a ``diverged`` row, the
final row's warning, the run's status, the terminal), healthy runs never are, and a resumed run
measures against its original start."""
from __future__ import annotations

import json
import math

import pytest
from training_kit import EXAMPLES, Rows, prepared

from revstudio import cli
from revstudio.training import runs
from revstudio.training.divergence import FACTOR, START_STEPS, DivergenceWatch
from revstudio.training.loop import train

TWO_BRANCH = str(next(p for p in EXAMPLES if p.stem == "two_branch"))
# SGD at lr 1000 on two_branch: cross-entropy from 1.39 to over 1e4 in three steps, finite throughout
DIVERGING = dict(steps=8, batch_size=8, data="synthetic", schedule="constant", log_every=1, val_every=0,
                 gradcheck_every=0, memory_every=0, checkpoint_every=0, mode="standard", optimizer="sgd",
                 lr=1000.0)


def test_the_watch_warns_once_against_the_lowest_early_loss() -> None:
    watch = DivergenceWatch()
    assert not any(watch.see(s, v) for s, v in enumerate([2.0, 1.5, 3.0, 30.0, 1000.0], 1))
    assert watch.start == 1.5 and watch.limit() == pytest.approx(1.5 + FACTOR * 1.5)
    assert watch.see(6, 1e6) and watch.warned == {"step": 6, "loss": 1e6, "start": 1.5}
    assert not watch.see(7, 1e7)  # once
    assert not watch.see(8, math.inf)  # (non-finite losses are the nan row's)


def test_a_loss_near_zero_or_below_it_is_measured_against_at_least_one() -> None:
    small = DivergenceWatch()
    small.see(1, 1e-6)
    assert not small.see(2, 5.0)  # 5e6 times the start, but a fitted regression's noise
    negative = DivergenceWatch()
    negative.see(1, -3.0)
    assert not negative.see(2, 100.0) and negative.see(3, 3000.0)


def test_the_start_stops_moving_after_the_first_steps_and_survives_a_checkpoint() -> None:
    watch = DivergenceWatch()
    for s in range(1, START_STEPS + 1):
        watch.see(s, 2.0)
    watch.see(START_STEPS + 1, 0.001)  # (later progress does not lower the bar)
    again = DivergenceWatch(watch.state())
    assert again.start == 2.0 and again.limit() == watch.limit()
    assert DivergenceWatch({"start": "x", "warned": 3}).state() == {"start": None, "seen": 0, "warned": None}


def test_a_diverging_run_finishes_with_a_warning_it_also_gave_when_it_happened() -> None:
    graph, report, cfg, data = prepared(TWO_BRANCH, **DIVERGING)
    rows = Rows()
    result = train(graph, report, cfg, data, callbacks=[rows])
    assert result.status == "finished"  # (the run goes on: no early stop was asked for)
    [row] = rows.event("diverged")
    assert row["step"] <= 4 and row["loss"] > FACTOR * row["start"]
    assert "--lr (now 1000)" in row["message"] and "--grad-clip 1.0" in row["message"]
    assert "The run goes on" in row["message"]
    finished = rows.event("finished")[0]
    assert finished["warning"] == row["message"] and finished["diverged_at"] == row["step"]
    assert result.message == row["message"]


def test_a_flow_diverging_in_standard_mode_is_said_in_bits_per_dimension() -> None:
    """glow_flow, Adam at lr 1: 2 bits/dim, then 1e8 to 1e17 for the rest of the run, all finite."""
    path = next(p for p in EXAMPLES if p.stem == "glow_flow")
    graph, report, cfg, data = prepared(path, **{**DIVERGING, "optimizer": "adam", "lr": 1.0, "steps": 12})
    rows = Rows()
    result = train(graph, report, cfg, data, callbacks=[rows])
    assert result.status == "finished" and result.message is not None
    [row] = rows.event("diverged")
    assert "bits per dimension" in row["message"] and rows.event("finished")[0]["warning"] == row["message"]
    assert rows.kind("step")[-1]["loss"] > 1e6


@pytest.mark.parametrize("name", [p.stem for p in EXAMPLES])
def test_healthy_examples_never_warn_even_at_ten_times_their_learning_rate(name: str) -> None:
    path = next(p for p in EXAMPLES if p.stem == name)
    graph, report, cfg, data = prepared(path, batch_size=16, log_every=1, val_every=0, gradcheck_every=0,
                                        memory_every=0, checkpoint_every=0)
    for lr in (cfg.lr, cfg.lr * 10):
        rows = Rows()
        result = train(graph, report, cfg.replace(lr=lr, steps=30), data, callbacks=[rows])
        assert result.status == "finished" and not rows.event("diverged"), (lr, result.message)
        assert "warning" not in rows.event("finished")[0]
        # the module's claim: at its own rate far below the rule, within 10 times the start's size above
        # the start (at 10x, digits_revnet spikes to ~430 times its start: under the rule, not within 10x)
        losses = [r["loss"] for r in rows.kind("step")]
        start = min(losses[:START_STEPS])
        if lr == cfg.lr:
            assert max(losses) <= start + 10 * max(abs(start), 1.0), (start, max(losses))


def test_a_resumed_run_measures_against_the_original_start(tmp_path) -> None:
    # a healthy start past the steps that set it, then a learning rate 1e5 times as high
    graph, report, cfg, data = prepared(TWO_BRANCH, **{**DIVERGING, "lr": 0.01, "steps": START_STEPS + 2})
    train(graph, report, cfg, data, run_dir=str(tmp_path))
    from revstudio.training.checkpoint import load

    saved = load(str(tmp_path / runs.CHECKPOINT))
    assert saved["divergence"]["seen"] == START_STEPS and 1.0 < saved["divergence"]["start"] < 1.39
    rows = Rows()
    result = train(graph, report, cfg.replace(lr=1000.0, steps=START_STEPS + 8), data, callbacks=[rows], resume=saved)
    assert result.status == "finished"
    [row] = rows.event("diverged")
    assert row["start"] == saved["divergence"]["start"] and row["step"] > START_STEPS + 2


def test_the_command_line_and_the_run_status_say_it(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    code = cli.main(["train", TWO_BRANCH, "--steps", "6", "--batch-size", "8", "--mode", "standard",
                     "--optimizer", "sgd", "--lr", "1000", "--device", "cpu", "--log-every", "1",
                     "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert text.count("warning: the loss diverged") == 2  # when it happened, and under the result
    status = json.loads((out / runs.STATUS).read_text())
    assert status["status"] == "finished" and status["message"].startswith("warning: the loss diverged")
    assert cli.main(["runs", str(tmp_path)]) == 0
    listed = capsys.readouterr().out
    assert "run: warning: the loss diverged" in listed
    assert cli.main(["runs", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["message"].startswith("warning: the loss diverged")
