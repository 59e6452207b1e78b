"""A run on uint8 inputs says at its start what became of them (terminal, --json's started row,
status.json), and a resume that would feed them at another scale than the run learned is refused:
``--no-scale-uint8`` toggled, or a run from before uint8 inputs were scaled (raw 0..255)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from training_kit import linear_classifier

from revstudio import cli
from revstudio.core.project import save
from revstudio.training import checkpoint as ckpt
from revstudio.training.launch import worker_args

FLAGS = ["--batch-size", "8", "--device", "cpu", "--gradcheck-every", "0", "--memory-every", "0",
         "--val-every", "0", "--checkpoint-every", "1"]


def _setup(tmp_path: Path, dtype: str = "uint8") -> tuple[str, str]:
    save(linear_classifier(), tmp_path / "clf.revs")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (40, 4)) if dtype == "uint8" else rng.random((40, 4))
    np.savez(tmp_path / "d.npz", x=x.astype(dtype), y=rng.integers(0, 3, 40))
    return str(tmp_path / "clf.revs"), str(tmp_path / "d.npz")


def _started(out: str) -> dict:
    return next(r for r in map(json.loads, out.splitlines()) if r.get("event") == "started")


def test_the_start_says_uint8_inputs_are_scaled_in_the_terminal_the_rows_and_status(tmp_path, capsys) -> None:
    project, data = _setup(tmp_path)
    run = str(tmp_path / "run")
    assert cli.main(["train", project, "--data", data, "--steps", "1", *FLAGS, "--out", run]) == 0
    out = capsys.readouterr().out
    assert "note: inputs: uint8 scaled to [0, 1] (x: k / 255" in out
    status = json.loads((tmp_path / "run" / "status.json").read_text())
    assert status["inputs"].startswith("inputs: uint8 scaled to [0, 1]")
    assert cli.main(["train", project, "--data", data, "--steps", "1", *FLAGS, "--out", str(tmp_path / "raw"),
                     "--no-scale-uint8", "--json"]) == 0
    row = _started(capsys.readouterr().out)
    assert row["inputs"] == "inputs: uint8 kept raw 0..255 (x; scale_uint8 false)"
    assert row["config"]["scale_uint8"] is False


def test_float_inputs_start_without_a_word_on_scaling(tmp_path, capsys) -> None:
    project, data = _setup(tmp_path, "float32")
    assert cli.main(["train", project, "--data", data, "--steps", "1", *FLAGS, "--out", str(tmp_path / "r"),
                     "--json"]) == 0
    assert _started(capsys.readouterr().out)["inputs"] is None


def test_a_resume_at_the_other_scale_is_refused_naming_the_flag(tmp_path, capsys) -> None:
    project, data = _setup(tmp_path)
    run = str(tmp_path / "run")
    assert cli.main(["train", project, "--data", data, "--steps", "1", *FLAGS, "--out", run]) == 0
    capsys.readouterr()
    assert cli.main(["train", "--resume", run, "--steps", "2", "--no-scale-uint8"]) == 2
    err = capsys.readouterr().err
    assert ("the run trained on its uint8 inputs scaled to [0, 1], this resume would feed them raw 0..255; its "
            "weights learned the other scale: resume with --scale-uint8") in err
    assert cli.main(["train", "--resume", run, "--steps", "2", "--json"]) == 0  # (the run's own setting: goes on)
    assert _started(capsys.readouterr().out)["data_changed"] is None


def test_a_run_from_before_the_scaling_goes_on_raw_and_is_not_resumed_scaled(tmp_path, capsys) -> None:
    project, data = _setup(tmp_path)
    run = tmp_path / "run"
    assert cli.main(["train", project, "--data", data, "--steps", "1", *FLAGS, "--out", str(run),
                     "--no-scale-uint8"]) == 0
    capsys.readouterr()
    # as an older revstudio wrote it: no scale_uint8 in the config, no uint8_scaled in the data record
    path = run / "checkpoints" / "last.pt"
    state = torch.load(path, weights_only=True)
    state["config"].pop("scale_uint8")
    state["data"].pop("uint8_scaled")
    ckpt.save(str(path), {k: v for k, v in state.items() if k not in ("format", "version")})
    config = json.loads((run / "config.json").read_text())
    config.pop("scale_uint8", None)
    (run / "config.json").write_text(json.dumps(config))
    assert cli.main(["train", "--resume", str(run), "--steps", "2", "--scale-uint8"]) == 2
    err = capsys.readouterr().err
    assert ("the run trained on its uint8 inputs raw 0..255 (it predates revstudio's scaling of uint8 inputs), "
            "this resume would feed them scaled to [0, 1]") in err and "resume with --no-scale-uint8" in err
    # (the app's Resume passes no flag: the run goes on as it trained, and says so)
    assert cli.main(["train", "--resume", str(run), "--steps", "2", "--json"]) == 0
    row = _started(capsys.readouterr().out)
    assert row["inputs"].startswith("inputs: uint8 kept raw 0..255") and row["data_changed"] is None


def test_torchrun_workers_get_the_setting_as_a_flag() -> None:
    args = argparse.Namespace(file="p.revs", resume=None, json=False, scale_uint8=False)
    assert "--no-scale-uint8" in worker_args(args, None)
    args.scale_uint8 = True
    assert "--scale-uint8" in worker_args(args, None) and "True" not in worker_args(args, None)
