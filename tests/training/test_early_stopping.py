"""Early stopping: ``training.patience`` / ``--patience N`` (and ``min_delta``) end a run once its val_loss
has not improved for N validations in a row: cleanly (the last checkpoint, best.pt the best weights), with
the ``finished`` row's ``early_stopped``, a line saying why and where the best weights are, and the count
kept across ``--resume``. Bad values are refused naming the setting."""
from __future__ import annotations

import json
import os

import pytest
import torch
from training_kit import VALIDATING, linear_regression, regression_project

from revstudio import cli
from revstudio.core.project import save
from revstudio.training import checkpoint as ckpt
from revstudio.training.config import ConfigError, TrainConfig
from revstudio.training.runs import read_metrics

QUIET = VALIDATING


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    torch.set_num_threads(1)
    here = tmp_path_factory.mktemp("early")
    regression_project(here)
    return here


def _finished(run) -> dict:
    return next(r for r in read_metrics(str(run)) if r.get("event") == "finished")


def test_a_run_whose_val_loss_stops_improving_ends_early_and_the_resume_keeps_the_count(project, capsys) -> None:
    run = project / "run"
    # 20 steps at a learning rate that improves every validation: no early stop
    assert cli.main(["train", str(project / "reg.revs"), "--out", str(run), *QUIET, "--json", "--steps", "20",
                     "--lr", "0.05", "--patience", "2"]) == 0
    assert "early_stopped" not in _finished(run)
    # on to 25 at a learning rate that makes validation worse than step 20's: one validation without improvement
    assert cli.main(["train", "--resume", str(run), "--json", "--steps", "25", "--lr", "2.0"]) == 0
    assert "early_stopped" not in _finished(run)
    assert ckpt.load(str(run / "checkpoints" / "last.pt"))["patience"]["waited"] == 1
    capsys.readouterr()
    # asked for 60: the second validation in a row without improvement (step 30, counting step 25's) ends it
    assert cli.main(["train", "--resume", str(run), "--steps", "60", "--lr", "2.0"]) == 0
    said = capsys.readouterr()
    rows = read_metrics(str(run))
    vals = {r["step"]: r["val_loss"] for r in rows if r.get("kind") == "val"}
    assert sorted(vals) == [5, 10, 15, 20, 25, 30] and min(vals, key=vals.__getitem__) == 20
    end = rows[-1]
    assert end["event"] == "finished" and end["step"] == 30
    assert end["early_stopped"] == {"step": 30, "patience": 2, "min_delta": 0.0, "best_step": 20,
                                    "best_val_loss": pytest.approx(vals[20])}
    assert not [r for r in rows if r.get("kind") == "step" and r["step"] > 30]
    last = ckpt.load(str(run / "checkpoints" / "last.pt"))
    best = ckpt.load(str(run / "checkpoints" / "best.pt"))
    assert last["step"] == 30 and best["step"] == 20
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "finished" and status["step"] == 30
    assert status["message"] == "stopped early at step 30 (best at 20)"
    best_file = os.path.join(str(run), "checkpoints", "best.pt")
    assert (f"stopped early at step 30: val_loss has not improved for 2 validations in a row; the best weights "
            f"(step 20, val_loss {vals[20]:.4g}) are in {best_file}") in said.out, said.out


def test_min_delta_counts_only_a_large_enough_fall_as_an_improvement(project, capsys) -> None:
    run = project / "delta"
    assert cli.main(["train", str(project / "reg.revs"), "--out", str(run), *QUIET, "--json", "--steps", "100",
                     "--lr", "0.05", "--patience", "2", "--min-delta", "1000"]) == 0
    rows = read_metrics(str(run))
    vals = {r["step"]: r["val_loss"] for r in rows if r.get("kind") == "val"}
    assert sorted(vals) == [5, 10, 15]  # the first validation improves, the next two fall by less than 1000
    assert vals[15] < vals[10] < vals[5]  # (they did fall: min_delta is what made them no improvement)
    end = rows[-1]
    assert end["early_stopped"]["step"] == 15 and end["early_stopped"]["min_delta"] == 1000.0
    assert end["early_stopped"]["best_step"] == 15  # best.pt keeps the lowest val_loss, whatever min_delta
    assert ckpt.load(str(run / "checkpoints" / "best.pt"))["step"] == 15


def test_patience_none_turns_off_the_projects_early_stopping(project, capsys) -> None:
    run = project / "off"
    assert cli.main(["train", str(project / "reg.revs"), "--out", str(run), *QUIET, "--json", "--steps", "20",
                     "--lr", "0.05", "--patience", "none", "--min-delta", "1000"]) == 0
    assert _finished(run)["step"] == 20 and "early_stopped" not in _finished(run)
    assert json.loads((run / "config.json").read_text())["patience"] is None


def test_bad_values_are_refused_naming_the_setting(project, capsys) -> None:
    for section, words in (({"patience": 0}, "training.patience: 0 is too small; use at least 1 validation"),
                           ({"patience": -3}, "training.patience: -3 is too small"),
                           ({"patience": 2.5}, "training.patience: expected a whole number"),
                           ({"patience": "5"}, "training.patience: expected a whole number"),
                           ({"min_delta": -0.1}, "training.min_delta: -0.1 is out of range; use 0 or more"),
                           ({"patience": 3, "val_every": 0}, "training.patience: early stopping counts "
                                                            "validations, and val_every is 0"),
                           ({"patience": 3, "val_fraction": 0}, "training.patience: early stopping counts "
                                                               "validations, and there is no validation")):
        with pytest.raises(ConfigError) as caught:
            TrainConfig.from_section(section)
        assert str(caught.value).startswith(words) and caught.value.key in section, caught.value
    # a section that sets it is stored as version 3 (an older revstudio says "newer", not "unknown key")
    assert TrainConfig.from_section({"patience": 4}).to_section() == {"version": 3, "patience": 4}
    assert TrainConfig.from_section({"version": 2, "threads": 2}).patience is None
    for value in ("0", "-1", "two"):
        assert cli.main(["train", str(project / "reg.revs"), "--patience", value]) == 2
        err = capsys.readouterr().err
        assert "argument --patience: " in err and value in err, err
    assert cli.main(["train", str(project / "reg.revs"), "--patience", "3", "--val-every", "0",
                     "--out", str(project / "refused")]) == 2
    assert "training.patience: early stopping counts validations" in capsys.readouterr().err
    assert not (project / "refused").exists()
    bad = project / "bad.revs"
    save(linear_regression({"task": "regression", "patience": 0}), bad)
    cli.main(["check", str(bad)])  # (check reports a bad training section among its findings)
    assert "training section: training.patience: 0 is too small" in capsys.readouterr().out


def test_patience_none_reaches_the_nproc_workers_as_none() -> None:
    import argparse

    from revstudio.clicmd import train as command
    from revstudio.training.launch import worker_args

    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    argv = worker_args(parser.parse_args(["p.revs", "--patience", "none", "--nproc", "2"]), "out")
    assert argv[argv.index("--patience") + 1] == "none"
    assert command.overrides(parser.parse_args(argv[1:]))["patience"] is None
