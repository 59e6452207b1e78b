"""``training.threads`` / ``--threads N``: the CPU thread count as a run setting, since the count decides a
run's last bits. Read strictly (a version-1 section migrates to torch's default), applied before any work,
recorded in environment.json, said on a resume that changes it, and compared by ``revstudio runs``."""
from __future__ import annotations

import json

import pytest
import torch
from training_kit import EXAMPLES

from revstudio import cli
from revstudio.training import runs, threads
from revstudio.training.config import ConfigError, TrainConfig

TWO_BRANCH = str(next(p for p in EXAMPLES if p.stem == "two_branch"))
STEPS = ["--steps", "3", "--batch-size", "8", "--device", "cpu", "--log-every", "1", "--json"]


def test_the_setting_is_read_strictly_and_a_version_1_section_migrates_to_torchs_default() -> None:
    assert TrainConfig.from_section({"version": 1, "lr": 0.01}).threads is None
    assert TrainConfig.from_section({"version": 2, "threads": 3}).threads == 3
    # a section that sets it is stored as version 2 (an older revstudio says "newer", not "unknown key");
    # one that does not stays version 1, which every revstudio reads
    assert TrainConfig.from_section({"threads": 3}).to_section() == {"version": 2, "threads": 3}
    assert TrainConfig.from_section({"lr": 0.01}).to_section() == {"version": 1, "lr": 0.01}
    assert TrainConfig().full_section()["threads"] is None
    for value, words in ((0, "training.threads: 0 is too small; use at least 1 CPU thread, or null"),
                         (-2, "training.threads: -2 is too small"),
                         (1.5, "training.threads: expected a whole number"),
                         ("4", "training.threads: expected a whole number"),
                         (100_000, "training.threads: 100000 is too large; use at most 1024")):
        with pytest.raises(ConfigError) as caught:
            TrainConfig.from_section({"threads": value})
        assert str(caught.value).startswith(words) and caught.value.key == "threads"


def test_more_threads_than_cpus_is_a_note_not_a_refusal(monkeypatch) -> None:
    monkeypatch.setattr(threads, "machine_cpus", lambda: 2)
    assert threads.over_note(2) is None and threads.over_note(None) is None
    note = threads.over_note(8, "--threads")
    assert note is not None and note.startswith("--threads 8 is more than the 2 CPUs") and "slower" in note


@pytest.mark.parametrize("command", ["train", "gradcheck", "memory"])
def test_the_flag_refuses_zero_and_negative_counts_naming_the_flag(command, capsys) -> None:
    for value in ("0", "-1", "two"):
        assert cli.main([command, TWO_BRANCH, "--threads", value]) == 2
        err = capsys.readouterr().err
        assert "argument --threads: " in err and value in err, err


def _rows(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _train(tmp_path, name: str, capsys, *more: str) -> list[dict]:
    before = torch.get_num_threads()
    assert cli.main(["train", TWO_BRANCH, *STEPS, "--out", str(tmp_path / name), *more]) == 0
    assert torch.get_num_threads() == before  # (in process: the caller's count put back)
    return _rows(capsys.readouterr().out)


def _losses(rows: list[dict]) -> list[float]:
    return [r["loss"] for r in rows if r["kind"] == "step"]


def test_runs_with_one_thread_repeat_bit_for_bit_and_the_count_is_recorded(tmp_path, capsys) -> None:
    one = _train(tmp_path, "one", capsys, "--threads", "1")
    again = _train(tmp_path, "again", capsys, "--threads", "1")
    two = _train(tmp_path, "two", capsys, "--threads", "2")
    assert _losses(one) == _losses(again) and len(_losses(one)) == 3
    # two threads: the same losses but perhaps their last bits (what is asserted is what was recorded)
    assert _losses(two) == pytest.approx(_losses(one), rel=1e-5)
    for name, count, rows in (("one", 1, one), ("two", 2, two)):
        env = json.loads((tmp_path / name / "environment.json").read_text())
        config = json.loads((tmp_path / name / "config.json").read_text())
        started = next(r for r in rows if r.get("event") == "started")
        assert env["threads"] == config["threads"] == started["threads"] == count
        saved = torch.load(tmp_path / name / "checkpoints" / "last.pt", weights_only=True)
        assert saved["threads"] == count


def test_a_resume_on_another_count_says_so_in_a_note(tmp_path, capsys) -> None:
    _train(tmp_path, "run", capsys, "--threads", "2")
    assert cli.main(["train", "--resume", str(tmp_path / "run"), "--steps", "4", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "threads 2 -> 1" in out  # (the changed settings of the resumed line)
    assert ("note: the run trained on 2 CPU threads before and goes on with 1: the losses from here may differ "
            "in their last bits") in out, out
    assert cli.main(["train", "--resume", str(tmp_path / "run"), "--steps", "5", "--threads", "1"]) == 0
    assert "CPU threads before" not in capsys.readouterr().out  # (the same count: nothing to say)


def test_runs_compare_the_count_a_run_had_whether_set_or_torchs_default(tmp_path, capsys) -> None:
    default = torch.get_num_threads()
    other = 2 if default != 2 else 1
    _train(tmp_path / "runs", "default", capsys)
    _train(tmp_path / "runs", "same", capsys, "--threads", str(default))
    _train(tmp_path / "runs", "other", capsys, "--threads", str(other))
    assert json.loads((tmp_path / "runs" / "default" / "config.json").read_text())["threads"] is None
    assert cli.main(["runs", str(tmp_path / "runs"), "--compare", "--json"]) == 0
    differ = json.loads(capsys.readouterr().out)["differ"]
    # the default run and the one that set the same count had the same threads: only the other differs
    assert differ["threads"] == {"default": default, "same": default, "other": other}, differ
    assert cli.main(["runs", str(tmp_path / "runs" / "default"), str(tmp_path / "runs" / "same"), "--json"]) == 0
    assert "threads" not in json.loads(capsys.readouterr().out)["differ"]
    assert runs.read_run(str(tmp_path / "runs" / "same")).status == "finished"


def test_memory_measures_with_the_threads_asked_for_and_says_so(capsys) -> None:
    before = torch.get_num_threads()
    other = 2 if before != 2 else 1
    assert cli.main(["memory", TWO_BRANCH, "--batch", "2", "--repeat", "1", "--threads", str(other), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["threads"] == other  # (the figure quotes its threads)
    assert torch.get_num_threads() == before  # (in process: put back)


def test_each_nproc_process_takes_the_threads_asked_for(tmp_path) -> None:
    # torchrun starts each worker with OMP_NUM_THREADS=1: the count recorded is the one the setting applied
    import os
    import subprocess
    import sys

    from training_kit import ROOT

    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    out = tmp_path / "ddp"
    proc = subprocess.run([sys.executable, "-P", "-m", "revstudio", "train", TWO_BRANCH, "--steps", "2",
                           "--batch-size", "8", "--device", "cpu", "--nproc", "2", "--threads", "2", "--json",
                           "--out", str(out)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    env_record = json.loads((out / "environment.json").read_text())
    started = next(r for r in _rows(proc.stdout) if r.get("event") == "started")
    assert env_record["threads"] == started["threads"] == 2 and env_record["processes"] == 2


def test_gradcheck_runs_on_the_threads_asked_for_and_records_them(capsys) -> None:
    before = torch.get_num_threads()
    other = 2 if before != 2 else 1
    assert cli.main(["gradcheck", TWO_BRANCH, "--threads", str(other), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["threads"] == other
    assert torch.get_num_threads() == before


def test_rs_train_takes_threads_and_gives_the_notebook_its_count_back(tmp_path) -> None:
    import revstudio as rs

    before = torch.get_num_threads()
    other = 2 if before != 2 else 1
    rs.train(TWO_BRANCH, steps=2, batch_size=8, device="cpu", threads=other, out=str(tmp_path / "nb"),
             progress=False)
    assert json.loads((tmp_path / "nb" / "environment.json").read_text())["threads"] == other
    assert torch.get_num_threads() == before


def test_a_checkpoint_from_before_the_count_was_kept_is_compared_with_the_runs_environment(tmp_path, capsys) -> None:
    _train(tmp_path, "old", capsys, "--threads", "2")
    path = tmp_path / "old" / "checkpoints" / "last.pt"
    saved = torch.load(path, weights_only=True)
    saved.pop("threads")  # (as an older revstudio wrote it; its environment.json still says 2)
    torch.save(saved, path)
    assert cli.main(["train", "--resume", str(tmp_path / "old"), "--steps", "4", "--threads", "1"]) == 0
    assert "note: the run trained on 2 CPU threads before and goes on with 1" in capsys.readouterr().out
