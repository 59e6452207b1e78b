"""``revstudio train`` and ``revstudio runs``: JSON rows, run directories, config errors, resume."""
from __future__ import annotations

import json
import os
import shutil

import pytest
import torch
from training_kit import EXAMPLES

from revstudio import cli
from revstudio.training import runs, session

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))
QUICK = ["--batch-size", "8", "--lr", "0.01", "--device", "cpu"]

STEP_KEYS = {"kind", "step", "epoch", "time", "loss", "lr", "samples_per_s", "accuracy"}
STARTED_KEYS = {"kind", "event", "time", "run_dir", "config", "device", "versions", "parameters", "total_steps",
                "steps_per_epoch", "mode", "task", "estimate_bytes", "standard_estimate_bytes", "regions",
                "resumed_from"}


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_json_rows_follow_the_schema_and_match_metrics_jsonl(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    code = cli.main(["train", EXAMPLE, "--steps", "4", *QUICK, "--json", "--out", str(out), "--log-every", "2",
                     "--val-every", "2", "--gradcheck-every", "2", "--memory-every", "4",
                     "--checkpoint-every", "2"])
    rows = _rows(capsys.readouterr().out)
    assert code == 0
    assert rows == runs.read_metrics(str(out))
    started = rows[0]
    assert started["event"] == "started" and STARTED_KEYS <= set(started)
    assert started["config"]["steps"] == 4 and started["versions"]["torch"] and started["task"] == "classification"
    assert started["regions"] == ["region-blocks"] and started["resumed_from"] is None
    steps = [r for r in rows if r["kind"] == "step"]
    assert [r["step"] for r in steps] == [2, 4] and all(STEP_KEYS <= set(r) for r in steps)
    assert {"peak_bytes", "estimate_bytes"} <= set(steps[-1])
    vals = [r for r in rows if r["kind"] == "val"]
    assert vals and {"val_loss", "val_accuracy", "step", "epoch", "time"} <= set(vals[0])
    check = next(r for r in rows if r["kind"] == "gradcheck")
    assert {"region", "grad_rel_error", "inversion_error"} == set(check["regions"][0])
    assert {"max_grad_rel_error", "max_inversion_error"} <= set(check)
    assert any(r.get("event") == "checkpoint" and r["path"] == "checkpoints/last.pt" for r in rows)
    finished = rows[-1]
    assert finished["event"] == "finished" and finished["step"] == 4 and "wall_s" in finished
    assert {"loss", "val_loss", "val_accuracy"} <= set(finished["metrics"])
    assert all(isinstance(r["time"], float) for r in rows)
    for name in ("project.revs", "config.json", "environment.json", "status.json", "model.py",
                 "checkpoints/last.pt"):
        assert (out / name).is_file(), name
    env = json.loads((out / "environment.json").read_text())
    assert {"python", "torch", "revstudio", "device", "threads", "hostname"} <= set(env)
    info = runs.read_run(str(out))
    assert info.status == "finished" and info.step == 4 and info.total_steps == 4 and "val_loss" in info.metrics
    ckpt = torch.load(out / "checkpoints" / "last.pt", weights_only=True)
    assert ckpt["format"] == "revstudio-checkpoint" and ckpt["step"] == 4 and "rng" in ckpt
    assert ckpt["graph"] == (out / "project.revs").read_text()

    assert cli.main(["runs", str(tmp_path)]) == 0
    listing = capsys.readouterr().out
    assert "run" in listing and "finished" in listing and "4/4" in listing


def _project(tmp_path, training: dict) -> str:
    text = json.loads(open(EXAMPLE).read())
    text["training"] = training
    path = tmp_path / "p.revs"
    path.write_text(json.dumps(text))
    return str(path)


def test_a_bad_training_section_is_refused_naming_the_key(tmp_path, capsys) -> None:
    path = _project(tmp_path, {"lr": "fast"})
    assert cli.main(["train", path, "--json"]) == 2
    row = _rows(capsys.readouterr().out)[-1]
    assert row["event"] == "failed" and "training.lr" in row["message"] and row["exit_code"] == 2
    assert cli.main(["train", _project(tmp_path, {"momentum": 2}), "--steps", "1"]) == 2
    assert "training.momentum" in capsys.readouterr().err
    assert cli.main(["train", EXAMPLE, "--lr", "-1"]) == 2
    assert "training.lr" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # nothing written for a run that never started


def test_a_memory_budget_from_the_command_line_reaches_the_run(tmp_path, capsys) -> None:
    quiet = ["--steps", "1", *QUICK, "--val-every", "0", "--gradcheck-every", "0", "--memory-every", "0"]
    assert cli.main(["train", EXAMPLE, *quiet, "--json", "--out", str(tmp_path / "a"), "--memory-budget", "64MiB"]) == 0
    started = _rows(capsys.readouterr().out)[0]
    assert started["config"]["memory_budget"] == 64 << 20
    # what it keeps, as memory --budget would say at the run's batch (64 MiB: every region whole)
    assert started["budget"]["kept_bytes"] > 0 and started["budget"]["regions"]
    assert all(r["state"] == "kept" for r in started["budget"]["regions"])
    assert cli.main(["train", EXAMPLE, *quiet, "--out", str(tmp_path / "b"), "--memory-budget", "0"]) == 0
    assert "in reversible mode (memory budget 0 B: keeps nothing at batch" in capsys.readouterr().out
    assert cli.main(["train", EXAMPLE, *quiet, "--out", str(tmp_path / "c"), "--memory-budget", "1MiB",
                     "--mode", "standard"]) == 0
    assert "memory budget 1.0 MiB, unused outside reversible mode" in capsys.readouterr().out
    # a budget that keeps a region's first steps can peak above standard mode: the run says so
    from revstudio.core.generate import revnet_chain
    from revstudio.core.project import save
    from revstudio.diagnostics.budget import budget_peak
    from revstudio.diagnostics.check import full_check
    from revstudio.diagnostics.estimate import estimate_peak

    graph = revnet_chain(3, channels=4, size=8)
    save(graph, tmp_path / "shallow.revs")
    report = full_check(graph, batch=8)
    standard = estimate_peak(graph, report, batch=8, mode="standard")
    over = next(b for b in range(1 << 10, 1 << 16, 1 << 10) if budget_peak(graph, report, b, batch=8) > standard)
    assert cli.main(["train", str(tmp_path / "shallow.revs"), *quiet, "--out", str(tmp_path / "d"),
                     "--memory-budget", str(over)]) == 0
    text = capsys.readouterr().out
    assert "the first " in text and "steps at batch" in text
    assert "note: under this memory budget the estimated peak" in text and "above standard mode's" in text
    # a project's own budget is dropped for one run with --memory-budget none
    budgeted = _project(tmp_path, {"memory_budget": "64MiB"})
    assert cli.main(["train", budgeted, *quiet, "--json", "--out", str(tmp_path / "e"), "--memory-budget", "none"]) == 0
    started = _rows(capsys.readouterr().out)[0]
    assert started["config"]["memory_budget"] is None and started["budget"] is None
    assert cli.main(["train", EXAMPLE, "--memory-budget", "lots"]) == 2
    err = capsys.readouterr().err
    assert "--memory-budget" in err and "'lots' is not an amount of memory" in err


def test_fp16_on_the_cpu_fails_clearly(tmp_path, capsys) -> None:
    code = cli.main(["train", EXAMPLE, "--precision", "fp16", "--device", "cpu", "--out", str(tmp_path / "r")])
    assert code == 2 and "fp16 needs a CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # refused before it started: no run folder


def test_bf16_says_the_estimate_does_not_cover_it(tmp_path, capsys) -> None:
    code = cli.main(["train", EXAMPLE, "--precision", "bf16", "--steps", "1", "--out", str(tmp_path / "r")])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and lines[1] == ("note: no memory estimate: the estimate models fp32 steps only; bf16 "
                                      "autocast is not modelled (the run measures its peak at --memory-every)")


def test_runs_lists_a_killed_run(tmp_path, capsys) -> None:
    run = tmp_path / "a"
    run.mkdir()
    runs.write_json(str(run / "status.json"), {"status": "running", "pid": 2 ** 22 + 12345, "step": 3,
                                                "total_steps": 9, "started": "x", "metrics": {}})
    assert runs.read_run(str(run)).status == "killed"
    assert cli.main(["runs", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["status"] == "killed"


class _StopAfter(session.StopFlag):
    polls = 0
    limit = 10 ** 9

    def __call__(self) -> bool:
        type(self).polls += 1
        return type(self).polls > type(self).limit


def test_a_resumed_run_reproduces_the_uninterrupted_losses(tmp_path, capsys, monkeypatch) -> None:
    args = ["--steps", "8", *QUICK, "--json", "--log-every", "1", "--schedule", "cosine", "--checkpoint-every",
            "3", "--val-every", "0"]
    assert cli.main(["train", EXAMPLE, *args, "--out", str(tmp_path / "full")]) == 0
    full = {r["step"]: r["loss"] for r in _rows(capsys.readouterr().out) if r["kind"] == "step"}
    monkeypatch.setattr(session, "StopFlag", _StopAfter)
    _StopAfter.limit = 5 * 2  # the loop polls twice a step: stop during step 6
    assert cli.main(["train", EXAMPLE, *args, "--out", str(tmp_path / "cut")]) == 0
    first = _rows(capsys.readouterr().out)
    assert first[-1]["event"] == "stopped" and runs.read_run(str(tmp_path / "cut")).status == "stopped"
    cut_at = first[-1]["step"]
    assert 0 < cut_at < 8
    _StopAfter.limit = 10 ** 9
    assert cli.main(["train", "--resume", str(tmp_path / "cut"), "--json"]) == 0
    second = _rows(capsys.readouterr().out)
    assert second[0]["resumed_from"] == str(tmp_path / "cut")
    resumed = {r["step"]: r["loss"] for r in second if r["kind"] == "step"}
    assert sorted(resumed) == list(range(cut_at + 1, 9))
    assert all(resumed[s] == full[s] for s in resumed)  # exactly, not approximately
    a = torch.load(tmp_path / "full" / "checkpoints" / "last.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "cut" / "checkpoints" / "last.pt", weights_only=True)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert runs.read_run(str(tmp_path / "cut")).status == "finished"


def test_resume_refuses_a_folder_without_a_checkpoint(tmp_path, capsys) -> None:
    run = tmp_path / "r"
    run.mkdir()
    shutil.copy(EXAMPLE, run / "project.revs")
    assert cli.main(["train", "--resume", str(run)]) == 2
    assert "no checkpoint" in capsys.readouterr().err
    assert cli.main(["train"]) == 2
    assert "--resume" in capsys.readouterr().err
    assert os.path.exists(run / "project.revs")


def test_resume_of_a_folder_that_is_no_run_says_what_to_give(tmp_path, capsys) -> None:
    """`--resume DIR` of a mistyped folder, or of a plain one, named the fault but not what to give instead."""
    assert cli.main(["train", "--resume", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "nowhere: no such run directory; give a run folder 'revstudio runs' lists" in err
    assert cli.main(["train", "--resume", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "not a run directory (no project.revs); give a run folder 'revstudio runs' lists" in err


@pytest.mark.parametrize("flags", [["--steps", "1", "--epochs", "1"], ["--batch-size", "0"]])
def test_bad_flags_are_usage_errors(flags, capsys) -> None:
    assert cli.main(["train", EXAMPLE, *flags]) == 2


@pytest.mark.parametrize("flags, words", [
    (["--nproc", "0"], "use at least 1"),
    (["--master-port", "65536"], "1 to 65535"),
    (["--seed", str(1 << 63)], "use a seed from 0 to 2147483647"),
    (["--nnodes", "0"], "at least 1 machine"),  # was an internal ZeroDivisionError (a world of 0 processes)
    (["--nnodes", "two"], "not a number of machines"),
    (["--nnodes", "4:2"], "MIN is more than MAX"),
])
def test_bad_flags_say_what_to_write(flags, words, capsys) -> None:
    assert cli.main(["train", EXAMPLE, *flags, "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert flags[0] in error and words in error and "batch" not in error


@pytest.mark.parametrize("flags, key", [(["--lr", "1e300"], "lr"), (["--weight-decay", "1e300"], "weight_decay")])
def test_values_beyond_float32_are_refused_naming_the_key(flags, key, tmp_path, capsys) -> None:
    code = cli.main(["train", EXAMPLE, "--steps", "1", "--out", str(tmp_path / "run"), *flags, "--json"])
    row = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert code == 2 and row["event"] == "failed" and f"training.{key}" in row["message"]
    assert "internal error" not in row["message"]


def test_human_output_shows_progress_and_the_result(tmp_path, capsys) -> None:
    assert cli.main(["train", EXAMPLE, "--steps", "2", *QUICK, "--log-every", "1", "--out", str(tmp_path / "h"),
                     "--val-fraction", "0.02"]) == 0
    text = capsys.readouterr().out
    assert "step 2/2" in text and "samples/s" in text and "ETA" in text
    assert "validation at step 2" in text and "finished 2 steps" in text


def test_a_missing_file_is_a_failed_row_with_json(tmp_path, capsys) -> None:
    assert cli.main(["train", str(tmp_path / "nope.revs"), "--json"]) == 2
    row = json.loads(capsys.readouterr().out)
    assert row["event"] == "failed" and "nope.revs" in row["message"] and row["exit_code"] == 2


def test_a_folder_as_the_project_is_named_as_a_folder(tmp_path, capsys) -> None:
    """A folder was reported as 'no such file', which sent the user looking for a typo."""
    assert cli.main(["train", str(tmp_path), "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and "no such file" not in err
    (tmp_path / "status.json").write_text("{}")  # a run directory: say how to continue it
    assert cli.main(["train", str(tmp_path), "--steps", "1"]) == 2
    assert f"--resume {tmp_path}" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--out", "--resume"])
def test_an_empty_out_or_resume_is_refused_not_taken_as_absent(flag, tmp_path, capsys) -> None:
    """`--out "$DIR"` with DIR unset trained into the project's own runs/ folder, and
    `--resume ""` started a new run instead of continuing one."""
    project = tmp_path / "p.revs"
    shutil.copy(EXAMPLE, project)
    assert cli.main(["train", str(project), "--steps", "1", *QUICK, flag, ""]) == 2
    assert f"{flag}: the path is empty" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("status", ["stopped", "failed"])
def test_a_folder_whose_run_ended_before_its_first_step_is_taken_over(status, tmp_path, capsys) -> None:
    """A Ctrl+C while the run loaded left status stopped at step 0 with no checkpoint: --resume
    had nothing to continue and --out refused the folder ('--resume continues it'), a dead end."""
    out = tmp_path / "run"
    out.mkdir()
    runs.write_json(str(out / "status.json"), {"status": status, "step": 0, "total_steps": 5, "metrics": {}})
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--out", str(out)]) == 0, capsys.readouterr().err
    assert runs.read_run(str(out)).status == "finished"


def test_an_unreadable_project_is_the_users_to_fix_not_an_internal_error(tmp_path, capsys) -> None:
    """A NaN in the project file (which JSON does not allow) was reported as an internal error."""
    data = json.loads(open(EXAMPLE).read())
    data["training"] = {**data.get("training", {}), "memory_budget": "NAN_HERE"}
    path = tmp_path / "nan.revs"
    path.write_text(json.dumps(data).replace('"NAN_HERE"', "NaN"))
    assert cli.main(["train", str(path), "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "NaN is not a number JSON allows" in err and "internal error" not in err


def test_the_run_snapshot_names_the_projects_data_from_its_own_folder(tmp_path, capsys) -> None:
    # the snapshot lives in the run folder: a data path relative to the project is made absolute,
    # so the snapshot trains on its own (and a run started in the app writes the same)
    project_dir = tmp_path / "project"
    project_dir.mkdir()
    x = torch.randn(12, 3, 16, 16)
    torch.save({"x": x, "y": torch.arange(12) % 10}, tmp_path / "tiny.pt")
    text = json.loads(open(EXAMPLE).read())
    text["training"] = {"data": "../tiny.pt", "val_fraction": 0.25}
    path = project_dir / "p.revs"
    path.write_text(json.dumps(text))
    out = tmp_path / "elsewhere" / "deeper" / "run"
    assert cli.main(["train", str(path), "--steps", "1", "--batch-size", "8", "--out", str(out),
                     "--gradcheck-every", "0", "--memory-every", "0"]) == 0
    # the environment names the device trained on; the setting ("auto") stays in config.json
    env = json.loads((out / "environment.json").read_text())
    assert env["device"] == ("cuda:0" if torch.cuda.is_available() else "cpu")
    assert json.loads((out / "config.json").read_text())["device"] == "auto"
    snapshot = json.loads((out / "project.revs").read_text())
    assert snapshot["training"]["data"] == str(tmp_path / "tiny.pt")
    capsys.readouterr()
    assert cli.main(["train", str(out / "project.revs"), "--steps", "1", *QUICK, "--out", str(tmp_path / "again"),
                     "--gradcheck-every", "0", "--memory-every", "0"]) == 0
    assert cli.main(["train", "--resume", str(out), "--steps", "2", "--gradcheck-every", "0",
                     "--memory-every", "0"]) == 0


def test_every_training_key_has_a_train_flag() -> None:
    # a key the exported training script takes (--momentum) is a flag of `revstudio train` too
    from revstudio.clicmd.train import OVERRIDES, overrides
    from revstudio.training.config import DEFAULTS

    assert set(DEFAULTS) <= set(OVERRIDES.values())
    parser, _ = cli._build_parser("train")
    args = parser.parse_args(["p.revs", "--optimizer", "sgd", "--momentum", "0.5"])
    assert overrides(args) == {"optimizer": "sgd", "momentum": 0.5}


def test_a_missing_data_file_is_named_once(tmp_path, capsys) -> None:
    # the message read "nope.npz: /…/nope.npz: no such file": the run prefixed the spec to the loader's
    # message, which names the file already
    code = cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--data", str(tmp_path / "nope.npz"), "--json",
                     "--out", str(tmp_path / "run")])
    row = _rows(capsys.readouterr().out)[-1]
    assert code == 2 and row["event"] == "failed"
    assert row["message"] == f"{tmp_path / 'nope.npz'}: no such file"


def test_a_data_path_from_the_current_folder_is_pointed_at(tmp_path, capsys, monkeypatch) -> None:
    # `--data data/x.npz` typed (or tab-completed) from the current folder is read from the project's
    # folder, as documented; the refusal named only the project-relative file, which left the user to
    # guess why a file they could see was "no such file"
    project = tmp_path / "models" / "net.revs"
    project.parent.mkdir()
    shutil.copy(EXAMPLE, project)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.npz").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    for flag in ("--data", "--val-data"):  # typed: refused before the run starts
        code = cli.main(["train", str(project), "--steps", "1", *QUICK, flag, os.path.join("data", "x.npz"),
                         "--json", "--out", str(tmp_path / "run")])
        message = _rows(capsys.readouterr().out)[-1]["message"]
        assert code == 2 and message.startswith(f"{flag} data/x.npz: a relative data path starts at the "
                                                f"project's folder ({tmp_path / 'models'})"), message
        assert f"give {flag} {tmp_path / 'data' / 'x.npz'}" in message
    # the project's own training.data naming it: the run's refusal says the same
    doc = json.loads(project.read_text())
    doc.setdefault("training", {})["data"] = "data/x.npz"
    project.write_text(json.dumps(doc))
    code = cli.main(["train", str(project), "--steps", "1", *QUICK, "--json", "--out", str(tmp_path / "run2")])
    message = _rows(capsys.readouterr().out)[-1]["message"]
    assert code == 2 and message.startswith(f"{tmp_path / 'models' / 'data' / 'x.npz'}: no such file; "), message
    assert f"relative data paths start from the project's folder ({tmp_path / 'models'})" in message
    assert f"--data {tmp_path / 'data' / 'x.npz'}" in message


def test_a_run_that_went_non_finite_says_at_which_step_in_its_status(tmp_path, capsys) -> None:
    """status.json (and `revstudio runs`) kept the step of the last step row: 0 for a run whose
    loss became NaN at step 2 before its first row."""
    out = tmp_path / "run"
    assert cli.main(["train", EXAMPLE, "--steps", "20", *QUICK, "--lr", "1e30", "--optimizer", "sgd",
                     "--log-every", "10", "--out", str(out), "--json"]) == 1
    nan = _rows(capsys.readouterr().out)[-1]
    assert nan["event"] == "nan"
    info = runs.read_run(str(out))
    assert info.status == "failed" and info.step == nan["step"] > 0
    assert "no checkpoint was saved before it" in nan["message"]


@pytest.mark.parametrize("samples", [1, 40])
def test_a_batch_norm_left_one_value_per_channel_is_refused_naming_it(samples, tmp_path, capsys) -> None:
    """A flat batch Norm trained one sample at a time: refused before step 1 naming the node
    (it stopped as an internal error), whether --batch-size says 1 or the data has one sample."""
    import numpy as np

    from revstudio.core.generate import Builder
    from revstudio.core.project import save

    b = Builder("bn")
    b.node("Input", "x", shape=[6])
    b.chain("x.out", b.node("Linear", "l", out_features=4), b.node("Norm", "n", kind="batch"), b.node("Output", "y"))
    path = tmp_path / "bn.revs"
    save(b.done(), path)
    np.savez(tmp_path / "d.npz", x=np.ones((samples, 6), "float32"), y=np.zeros(samples, "int64"))
    size = "1" if samples > 1 else "8"
    code = cli.main(["train", str(path), "--data", str(tmp_path / "d.npz"), "--batch-size", size, "--steps", "1",
                     "--device", "cpu", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 1 and "Norm n: batch norm of 4" in err and "internal error" not in err, err


def test_train_help_gives_the_projects_settings_as_the_defaults(capsys) -> None:
    # each flag overrides the project's key (docs/cli.md); --help said "default synthetic" and
    # "default 0.001" although digits_revnet.revs trains on digits.npz at lr 0.01 without flags
    import re

    assert cli.main(["train", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split("options:")[1].split())  # the option list, not the usage
    for flag in ("--steps", "--data", "--val-fraction", "--lr", "--batch-size", "--momentum"):
        help_text = re.search(rf"{flag} \S+ (.*?)(?= --|$)", out)
        assert help_text is not None, flag
        if "default" in help_text.group(1):
            assert "default: the project's" in help_text.group(1), (flag, help_text.group(1))


def test_train_help_states_every_overrides_default_as_the_docs_table_does(capsys) -> None:
    """--mode, --optimizer, --seed, --log-every and others named no default, and --memory-every
    spoke of "memory rows", which do not exist (the peak is on the step row)."""
    import re

    from revstudio.clicmd.train import OVERRIDES
    from revstudio.training.config import DEFAULTS

    assert cli.main(["train", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split("options:")[1].split())
    for flag, key in OVERRIDES.items():
        if key == "val_data":  # (its default is a hold-out, said in words)
            continue
        # (a --flag / --no-flag pair, such as --scale-uint8, has no metavar)
        found = re.search(rf"--{flag.replace('_', '-')}(?:, --no-{flag.replace('_', '-')}| \S+) (.*?)"
                          rf"(?= --[a-z0-9-]+(?:,| [A-Z{{])|$)", out)
        assert found is not None, flag
        value = "none" if DEFAULTS[key] is None else str(DEFAULTS[key]).lower() \
            if isinstance(DEFAULTS[key], bool) else DEFAULTS[key]
        assert f"default: the project's, {value})" in found.group(1) + ")", (flag, found.group(1))
    assert "memory rows" not in out


def _huge_project(tmp_path, shape: list[int]) -> str:
    doc = {"format": "revstudio", "version": 1, "name": "huge",
           "nodes": [{"id": "x", "type": "Input", "params": {"shape": shape}},
                     {"id": "fc", "type": "Linear", "params": {"out_features": 2}},
                     {"id": "y", "type": "Output", "params": {}}],
           "edges": [["x.out", "fc.in"], ["fc.out", "y.in"]]}
    path = tmp_path / "huge.revs"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("shape", [[10 ** 6, 10 ** 6, 10 ** 6], [2 ** 20, 2 ** 20, 2 ** 20]])
def test_a_graph_no_machine_holds_is_refused_before_its_data_is_made(shape, tmp_path, capsys) -> None:
    """`check` warns of it and gradcheck/memory refuse it; train made its synthetic data and ended in an internal
    error (torch's allocator, or 'Storage size calculation overflowed'). Now it is refused as they refuse it."""
    run = tmp_path / "run"
    assert cli.main(["train", _huge_project(tmp_path, shape), "--steps", "1", "--out", str(run), "--json"]) == 1
    row = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert row["event"] == "failed" and "internal error" not in row["message"]
    assert "one step needs at least" in row["message"] and "x's output" in row["message"]
    assert not run.exists()
