"""``--resume`` of a run that stopped early (``--patience``): refused with the run's facts and the two ways on
(a larger ``--patience``, whose count goes on from the stopped run's, or ``--patience none``), under
``--nproc`` too; the run folder untouched by the refusal."""
from __future__ import annotations

import json

import pytest
import torch
from training_kit import VALIDATING, regression_project

from revstudio import cli
from revstudio.training import checkpoint as ckpt
from revstudio.training.runs import read_metrics

QUIET = VALIDATING


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A run of 40 steps that stopped early at step 15: validations at 5, 10 and 15, the last two falling by
    less than min_delta 1000."""
    torch.set_num_threads(1)
    here = tmp_path_factory.mktemp("early_resume")
    regression_project(here)
    run = here / "run"
    assert cli.main(["train", str(here / "reg.revs"), "--out", str(run), *QUIET, "--json", "--steps", "40",
                     "--lr", "0.05", "--patience", "2", "--min-delta", "1000"]) == 0
    end = read_metrics(str(run))[-1]
    assert end["event"] == "finished" and end["early_stopped"]["step"] == 15
    return run


def _copy(run, to):
    import shutil

    shutil.copytree(run, to)
    return to


def _refusal(run) -> str:
    best = ckpt.load(str(run / "checkpoints" / "last.pt"))["best"]
    return (f"--resume {run}: the run stopped early at step 15 (best at {best['step']}, val_loss "
            f"{best['val_loss']:.4g}): val_loss has not improved for 2 validations in a row, and its patience is "
            "2; to train on, give a larger --patience (the count of 2 goes on: --patience M stops once M "
            "validations in a row have not improved) or --patience none to turn early stopping off")


def test_resuming_a_run_that_stopped_early_is_refused_with_what_to_do(stopped, capsys) -> None:
    before = {name: (stopped / name).read_bytes() for name in ("status.json", "metrics.jsonl")}
    capsys.readouterr()
    assert cli.main(["train", "--resume", str(stopped)]) == 2
    err = capsys.readouterr().err
    assert _refusal(stopped) in err and "Traceback" not in err, err
    # the same with --json (what the app's worker prints): one failed row with those words
    assert cli.main(["train", "--resume", str(stopped), "--json"]) == 2
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["event"] == "failed" and row["exit_code"] == 2 and row["message"] == _refusal(stopped)
    # the same patience given again, or a smaller one, is no way on either
    assert cli.main(["train", "--resume", str(stopped), "--patience", "2"]) == 2
    assert "the run stopped early at step 15" in capsys.readouterr().err
    assert {name: (stopped / name).read_bytes() for name in before} == before  # the run as it ended


def test_nproc_refuses_it_once_with_the_same_words(stopped, capsys) -> None:
    capsys.readouterr()
    assert cli.main(["train", "--resume", str(stopped), "--nproc", "2"]) == 2
    err = capsys.readouterr().err
    assert _refusal(stopped) in err and err.count("stopped early") == 1, err


def test_a_larger_patience_trains_on_with_the_count_kept(stopped, tmp_path, capsys) -> None:
    run = _copy(stopped, tmp_path / "on")
    assert cli.main(["train", "--resume", str(run), "--patience", "3", "--json"]) == 0
    rows = read_metrics(str(run))
    vals = sorted(r["step"] for r in rows if r.get("kind") == "val")
    # the count of 2 goes on: step 20's validation (no fall by 1000 either) is the third in a row
    assert vals == [5, 10, 15, 20]
    assert rows[-1]["event"] == "finished" and rows[-1]["early_stopped"]["step"] == 20
    assert rows[-1]["early_stopped"]["patience"] == 3
    assert ckpt.load(str(run / "checkpoints" / "last.pt"))["patience"]["waited"] == 3


def test_patience_none_trains_on_to_the_steps_asked(stopped, tmp_path, capsys) -> None:
    run = _copy(stopped, tmp_path / "off")
    assert cli.main(["train", "--resume", str(run), "--patience", "none", "--json"]) == 0
    end = read_metrics(str(run))[-1]
    assert end["event"] == "finished" and end["step"] == 40 and "early_stopped" not in end


def test_a_run_that_finished_without_stopping_early_is_told_so(tmp_path, capsys) -> None:
    """A run that ended its 10 steps with no --patience, resumed for 40 with a patience its count already
    reached, was refused as if it had "stopped early at step 10"."""
    regression_project(tmp_path)
    run = tmp_path / "run"
    assert cli.main(["train", str(tmp_path / "reg.revs"), "--out", str(run), *QUIET, "--json", "--steps", "10",
                     "--lr", "0.05", "--min-delta", "1000"]) == 0
    assert "early_stopped" not in read_metrics(str(run))[-1]
    capsys.readouterr()
    assert cli.main(["train", "--resume", str(run), "--steps", "40", "--patience", "1"]) == 2
    err = capsys.readouterr().err
    assert f"--resume {run}: the run did not stop early, but at step 10 (best at " in err, err
    assert ("val_loss has not improved for 1 validation in a row, which already reaches the patience of 1 given "
            "now: it would stop at its next validation; to train on, give a larger --patience") in err, err
    assert "stopped early" not in err
