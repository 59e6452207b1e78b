"""The not-learning check's limits: a run shorter than its check step, and labels that are not balanced.

A run that ended before its check step (one epoch, at least 100 steps) was never judged, and
said nothing: it read as a run that learns. A run of at least 100 steps is now judged at its
last step, and a shorter one's end says it was not checked (the rule at fewer steps would tell
healthy example runs wrongly: two_branch at 40 steps has fallen 1.2 % at chance accuracy). And
chance was 1 / classes: on labels 85 % of one class, a model that always guesses that class
scores 85 % and was never told; chance is now the most frequent label's share of those seen.
"""
from __future__ import annotations

import json

import pytest
import torch
from training_kit import EXAMPLES, Rows, prepared

from revstudio import cli
from revstudio.training import runs
from revstudio.training.first_batch import epoch_order
from revstudio.training.learning import MIN_STEPS, LearningWatch, check_step
from revstudio.training.loop import plan_steps, train

TWO_BRANCH = str(next(p for p in EXAMPLES if p.stem == "two_branch"))
QUIET = dict(val_every=0, gradcheck_every=0, memory_every=0, checkpoint_every=0, log_every=50)


@pytest.fixture(autouse=True)
def _few_threads() -> None:
    torch.set_num_threads(1)


def test_a_run_shorter_than_an_epoch_is_judged_at_its_end_and_a_shorter_one_is_not() -> None:
    assert check_step(115, 105) == 105 and check_step(115, 115) == 115 and check_step(115, 500) == 115
    assert check_step(115, MIN_STEPS - 1) is None and check_step(25, 60) is None and check_step(25, 100) == 100


def test_chance_is_the_most_frequent_labels_share() -> None:
    guesser = LearningWatch()  # always the majority class of labels 85 % / 5 % / 5 % / 5 %
    assert not any(guesser.see(s, 2.0 - s / 100, 85, 100, 100, 4, [85, 5, 5, 5]) for s in range(1, 100))
    assert guesser.see(100, 1.0, 85, 100, 100, 4, [85, 5, 5, 5])
    assert guesser.warned is not None and guesser.warned["chance"] == pytest.approx(0.85)
    learner = LearningWatch()  # well above that share
    assert not any(learner.see(s, 2.0 - s / 100, 97, 100, 100, 4, [85, 5, 5, 5]) for s in range(1, 101))
    unknown = LearningWatch()  # no label counts (a checkpoint from before them): 1 / classes
    assert not any(unknown.see(s, 2.0 - s / 100, 85, 100, 100, 4) for s in range(1, 101))
    kept = LearningWatch(LearningWatch(guesser.state()).state())
    assert kept.labels == [8500.0, 500.0, 500.0, 500.0]


def _imbalanced(data, share: float) -> None:
    """Labels of two_branch's synthetic set redrawn: ``share`` of them class 0, and none tied to its input."""
    gen = torch.Generator().manual_seed(7)
    n = len(data.train.targets)
    labels = torch.where(torch.rand(n, generator=gen) < share, 0, torch.randint(1, 4, (n,), generator=gen))
    data.train.targets = labels.to(data.train.targets.dtype)


def test_labels_of_one_class_mostly_unrelated_to_the_inputs_are_told() -> None:
    graph, report, cfg, data = prepared(TWO_BRANCH, **QUIET)
    _imbalanced(data, 0.85)
    at = check_step(plan_steps(cfg, len(data.train))[1])
    rows = Rows()
    train(graph, report, cfg.replace(steps=at), data, callbacks=[rows])
    [row] = rows.event("not_learning")
    batch = plan_steps(cfg, len(data.train))[0]  # the labels trained on: the first epoch's batches
    seen = data.train.targets[epoch_order(len(data.train), cfg.seed, 0)[:at * batch]]
    assert row["step"] == at and row["accuracy"] is not None and row["accuracy"] > 0.8
    assert row["chance"] == pytest.approx(float(torch.bincount(seen).max()) / len(seen), rel=1e-12)
    assert 0.8 < row["chance"] < 0.9 and "most frequent label" in row["message"], row


def test_a_run_of_100_steps_short_of_its_epoch_is_judged_at_its_end() -> None:
    graph, report, cfg, data = prepared(TWO_BRANCH, **QUIET, lr=1e-7)
    assert plan_steps(cfg, len(data.train))[1] > 105  # (its check step would be past the run's end)
    rows = Rows()
    result = train(graph, report, cfg.replace(steps=105), data, callbacks=[rows])
    [row] = rows.event("not_learning")
    assert row["step"] == 105 and rows.event("finished")[0]["not_learning_at"] == 105
    assert result.message == row["message"] and "note" not in rows.event("finished")[0]


def test_a_run_too_short_to_check_says_so_at_its_end(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    code = cli.main(["train", TWO_BRANCH, "--steps", "30", "--lr", "1e-7", "--device", "cpu", "--val-every", "0",
                     "--gradcheck-every", "0", "--memory-every", "0", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "warning" not in text
    note = ("note: not checked whether the run learns: it ran 30 steps, and the check needs at least "
            f"{MIN_STEPS}")
    assert text.count(note) == 1, text
    assert "--steps 100" in text
    rows = [json.loads(line) for line in (out / runs.METRICS).read_text().splitlines()]
    assert rows[-1]["event"] == "finished" and rows[-1]["note"].startswith(note[len("note: "):])
    status = json.loads((out / runs.STATUS).read_text())
    assert status["status"] == "finished" and status["message"].startswith(note)
    assert cli.main(["runs", str(tmp_path)]) == 0  # (the table marks it, and says why once under it)
    listing = capsys.readouterr().out.splitlines()
    assert "not checked" in listing[1] and listing[-1].startswith(
        f"learning not checked: the check needs at least {MIN_STEPS} steps"), listing


@pytest.mark.parametrize("name", [p.stem for p in EXAMPLES])
def test_the_examples_judged_at_the_end_of_a_100_step_run_are_never_told(name: str) -> None:
    """The earliest step a run is judged at: the examples (one epoch is 25 to 115 steps) pass it too."""
    graph, report, cfg, data = prepared(next(p for p in EXAMPLES if p.stem == name), **QUIET)
    rows = Rows()
    result = train(graph, report, cfg.replace(steps=MIN_STEPS), data, callbacks=[rows])
    assert result.status == "finished" and not rows.event("not_learning"), result.message
    assert "note" not in rows.event("finished")[0]


def test_a_short_run_whose_accuracy_is_plainly_above_chance_needs_no_note(tmp_path, capsys) -> None:
    # digits_revnet at its own settings learns in 60 steps (accuracy about 0.95 against 0.1): its end
    # said "too short to check that it learns" beside the curves that showed it had
    digits = str(next(p for p in EXAMPLES if p.stem == "digits_revnet"))
    out = tmp_path / "run"
    code = cli.main(["train", digits, "--steps", "60", "--device", "cpu", "--val-every", "0",
                     "--gradcheck-every", "0", "--memory-every", "0", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "not checked" not in text and "warning" not in text, text
    rows = [json.loads(line) for line in (out / runs.METRICS).read_text().splitlines()]
    assert rows[-1]["event"] == "finished" and "note" not in rows[-1]


def test_the_message_counts_one_epoch_in_the_singular() -> None:
    from revstudio.training.learning import not_learning_message

    warned = {"step": 115, "start": 1.4, "loss": 1.39, "flat": True, "accuracy": None}
    assert "after 115 steps (1 epoch) " in not_learning_message(warned, 0.001, 115)
    assert "after 230 steps (2 epochs) " in not_learning_message({**warned, "step": 230}, 0.001, 115)
