"""Resuming a run that a non-finite loss stopped: the message says when resuming cannot help.

A step's loss is computed from the weights before it. Where the checkpoint's own weights give
a non-finite loss at the first step after it, no --lr of the resumed run changes that; the
message told the user to "try a lower --lr" and the resumed run failed the same way.
"""
from __future__ import annotations

import json

from training_kit import EXAMPLES

from revstudio import cli

PROJECT = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))
FLAGS = ["--batch-size", "8", "--device", "cpu", "--json", "--gradcheck-every", "0", "--memory-every", "0",
         "--val-every", "0", "--checkpoint-every", "1", "--optimizer", "sgd"]


def _nan(out: str) -> dict:
    return next(r for r in map(json.loads, out.splitlines()) if r.get("event") == "nan")


def test_resuming_into_the_same_non_finite_step_says_a_new_run_is_needed(tmp_path, capsys) -> None:
    run = str(tmp_path / "run")
    assert cli.main(["train", PROJECT, "--steps", "20", "--lr", "1e30", *FLAGS, "--out", run]) == 1
    first = _nan(capsys.readouterr().out)
    assert "Try a lower --lr" in first["message"]
    assert cli.main(["train", "--resume", run, "--lr", "1e-4", "--json"]) == 1
    again = _nan(capsys.readouterr().out)
    assert again["step"] == first["step"]
    assert "the first step after the checkpoint" in again["message"] and "start a new run" in again["message"]
    assert "Try a lower --lr" not in again["message"]
