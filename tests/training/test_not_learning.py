"""A run that cannot learn (labels shuffled, a learning rate so small nothing moves) is told so (a
``not_learning`` row, the final row's warning, the run's status, the terminal); the example
projects at their own settings never are. It used to finish looking like any other run."""
from __future__ import annotations

import json

import pytest
import torch
from training_kit import EXAMPLES, Rows, prepared

from revstudio import cli
from revstudio.training import runs
from revstudio.training.learning import ACC_STEPS, MIN_STEPS, LearningWatch, check_step
from revstudio.training.loop import plan_steps, train

TWO_BRANCH = str(next(p for p in EXAMPLES if p.stem == "two_branch"))
QUIET = dict(val_every=0, gradcheck_every=0, memory_every=0, checkpoint_every=0, log_every=50)


@pytest.fixture(autouse=True)
def _few_threads() -> None:
    torch.set_num_threads(1)


def test_the_watch_looks_once_at_its_step() -> None:
    flat = LearningWatch()
    assert not any(flat.see(s, 1.39, 8, 32, 100, 4) for s in range(1, 100))
    assert flat.see(100, 1.39, 8, 32, 100, 4)  # loss unmoved, accuracy 25 % of 4 classes
    assert flat.warned is not None and flat.warned["flat"] and flat.warned["accuracy"] == pytest.approx(0.25)
    assert not flat.see(101, 1.39, 8, 32, 100, 4)  # once
    falling = LearningWatch()
    assert not any(falling.see(s, 2.0 - s / 100, 30, 32, 100, 4) for s in range(1, 150))
    at_chance = LearningWatch()  # the loss fell, but guessing stays at chance: shuffled labels
    assert not any(at_chance.see(s, 2.0 - s / 100, 8, 32, 100, 4) for s in range(1, 100))
    assert at_chance.see(100, 1.0, 8, 32, 100, 4)
    assert at_chance.warned is not None and not at_chance.warned["flat"]
    regression = LearningWatch()  # no classes: the loss alone
    assert not any(regression.see(s, 2.0 - s / 100, 0, 32, 100, None) for s in range(1, 101))
    assert check_step(25) == MIN_STEPS and check_step(115) == 115 and check_step(10**6) == 1000


def test_the_watch_survives_a_checkpoint() -> None:
    watch = LearningWatch()
    for s in range(1, 60):
        watch.see(s, 1.0, 8, 32, 100, 4)
    again = LearningWatch(watch.state())
    assert len(again.hits) == ACC_STEPS and again.first == watch.first and not again.checked
    assert all(not again.see(s, 1.0, 8, 32, 100, 4) for s in range(60, 100)) and again.see(100, 1.0, 8, 32, 100, 4)
    assert LearningWatch({"first": "x", "hits": [1, [2]], "warned": 3}).state() == {
        "first": [], "last": [], "hits": [], "labels": [], "checked": False, "seen": 0, "warned": None}
    late = LearningWatch()  # resumed past the check from a checkpoint that kept no watch: no start to judge by
    assert not any(late.see(s, 1.0, 8, 32, 100, 4) for s in range(150, 200)) and late.checked


def _shuffled(data) -> None:
    gen = torch.Generator().manual_seed(123)
    data.train.targets = data.train.targets[torch.randperm(len(data.train.targets), generator=gen)]


@pytest.mark.parametrize("case", ["shuffled labels", "lr 1e-7"])
def test_a_run_that_cannot_learn_is_told_and_its_end_repeats_it(case: str) -> None:
    graph, report, cfg, data = prepared(TWO_BRANCH, **QUIET, **({"lr": 1e-7} if case == "lr 1e-7" else {}))
    if case == "shuffled labels":
        _shuffled(data)
    at = check_step(plan_steps(cfg, len(data.train))[1])
    rows = Rows()
    result = train(graph, report, cfg.replace(steps=at + 5), data, callbacks=[rows])
    assert result.status == "finished"  # (the run goes on)
    [row] = rows.event("not_learning")
    assert row["step"] == at and "the run is not learning" in row["message"]
    assert "targets belong to their inputs" in row["message"] and f"--lr (now {cfg.lr:g})" in row["message"]
    if case == "shuffled labels":
        assert row["accuracy"] is not None and row["accuracy"] < 0.3 and 0.25 <= row["chance"] < 0.26
    else:
        assert "the training loss went from" in row["message"]
    finished = rows.event("finished")[0]
    assert finished["warning"] == row["message"] and finished["not_learning_at"] == at
    assert result.message == row["message"]


@pytest.mark.parametrize("name", [p.stem for p in EXAMPLES])
def test_the_examples_at_their_own_settings_are_never_told(name: str) -> None:
    path = next(p for p in EXAMPLES if p.stem == name)
    graph, report, cfg, data = prepared(path, **QUIET)
    at = check_step(plan_steps(cfg, len(data.train))[1])
    rows = Rows()
    result = train(graph, report, cfg.replace(steps=at), data, callbacks=[rows])
    assert result.status == "finished" and not rows.event("not_learning"), result.message


def test_the_command_line_and_the_run_status_say_it(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    code = cli.main(["train", TWO_BRANCH, "--steps", "120", "--lr", "1e-7", "--device", "cpu", "--val-every", "0",
                     "--gradcheck-every", "0", "--memory-every", "0", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert text.count("warning: the run is not learning") == 2  # when it was seen, and under the result
    status = json.loads((out / runs.STATUS).read_text())
    assert status["status"] == "finished" and status["message"].startswith("warning: the run is not learning")
    assert cli.main(["runs", str(tmp_path)]) == 0
    assert "run: warning: the run is not learning" in capsys.readouterr().out
    assert cli.main(["runs", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["message"].startswith("warning: the run is not learning")
