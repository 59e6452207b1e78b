"""``revstudio train --resume``: the rows and weights of the uninterrupted run, and clear refusals.

A tiny wired-coupling network with dropout and BatchNorm (random streams and running statistics
both go through the checkpoint) on 40 samples, so a run crosses several epochs in a few steps.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from revstudio import cli
from revstudio.training import loop, runs

PROJECT = {
    "format": "revstudio", "version": 1, "name": "tiny",
    "nodes": [
        {"id": "x", "type": "Input", "params": {"shape": [4, 6, 6]}},
        {"id": "s", "type": "Split", "params": {"sections": 2}},
        {"id": "f", "type": "Conv", "params": {"out_channels": 2, "kernel_size": 3, "padding": "same"}},
        {"id": "d", "type": "Dropout", "params": {"p": 0.3}},
        {"id": "m", "type": "Merge", "params": {"mode": "add"}},
        {"id": "c", "type": "Concat", "params": {}},
        {"id": "n", "type": "Norm", "params": {"kind": "batch"}},
        {"id": "h", "type": "Linear", "params": {"out_features": 3}},
        {"id": "y", "type": "Output", "params": {}},
    ],
    "edges": [["x.out", "s.in"], ["s.out1", "f.in"], ["f.out", "d.in"], ["s.out0", "m.in0"], ["d.out", "m.in1"],
              ["m.out", "c.in0"], ["s.out1", "c.in1"], ["c.out", "n.in"], ["n.out", "h.in"], ["h.out", "y.in"]],
    "groups": {}, "training": {"data": "d.npz"}, "view": {},
}
FLAGS = ["--batch-size", "8", "--lr", "0.01", "--device", "cpu", "--json", "--log-every", "5", "--val-every", "4",
         "--checkpoint-every", "0", "--gradcheck-every", "0", "--memory-every", "0"]


@pytest.fixture
def project(tmp_path: Path) -> str:
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", x=rng.standard_normal((40, 4, 6, 6)).astype("float32"), y=rng.integers(0, 3, 40))
    path = tmp_path / "tiny.revs"
    path.write_text(json.dumps(PROJECT))
    return str(path)


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _numbers(rows: list[dict]) -> dict:
    """Every step and val row's numbers by (kind, step); the finished row's metrics."""
    keep = ("loss", "accuracy", "lr", "epoch", "val_loss", "val_accuracy")
    out: dict = {(r["kind"], r["step"]): {k: r[k] for k in keep if k in r} for r in rows if r["kind"] in ("step", "val")}
    out["finished"] = [r["metrics"] for r in rows if r.get("event") == "finished"]
    return out


def _stopped_run(project: str, out: Path, steps: int, stop_during: int, monkeypatch, capsys) -> list[dict]:
    """A run that a signal stops during step ``stop_during`` (the loop reads the flag with that
    step's numbers, so the step completes and the run stops with a checkpoint after it)."""
    real, count = loop._allreduce, [0]

    def signal_during_step(values, dist, device):
        count[0] += 1
        return [*values[:4], 1.0 if count[0] == stop_during else values[4], *values[5:]]

    monkeypatch.setattr(loop, "_allreduce", signal_during_step)
    assert cli.main(["train", project, "--steps", str(steps), *FLAGS, "--out", str(out)]) == 0
    monkeypatch.setattr(loop, "_allreduce", real)
    rows = _rows(capsys.readouterr().out)
    assert rows[-1]["event"] == "stopped" and rows[-1]["step"] == stop_during
    return rows


def test_a_run_stopped_between_step_rows_resumes_to_the_uninterrupted_rows(project, tmp_path, capsys,
                                                                           monkeypatch) -> None:
    """The step row after a resume averaged only the steps since the resume (the window of the
    step rows was not in the checkpoint), so its loss and accuracy were not the uninterrupted run's."""
    assert cli.main(["train", project, "--steps", "12", *FLAGS, "--out", str(tmp_path / "full")]) == 0
    full = _rows(capsys.readouterr().out)
    first = _stopped_run(project, tmp_path / "cut", 12, 7, monkeypatch, capsys)  # between the rows of 5 and 10
    assert cli.main(["train", "--resume", str(tmp_path / "cut"), "--json"]) == 0
    second = _rows(capsys.readouterr().out)
    assert _numbers(first + second) == _numbers(full)  # exactly, the finished metrics too
    a = torch.load(tmp_path / "full" / "checkpoints" / "last.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "cut" / "checkpoints" / "last.pt", weights_only=True)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_run_stopped_after_its_last_step_resumes_to_its_end_with_its_metrics(project, tmp_path, capsys,
                                                                               monkeypatch) -> None:
    """Its finished row said "loss": null: the metrics so far were not in the checkpoint."""
    assert cli.main(["train", project, "--steps", "4", *FLAGS, "--out", str(tmp_path / "full")]) == 0
    full = _rows(capsys.readouterr().out)
    _stopped_run(project, tmp_path / "cut", 4, 4, monkeypatch, capsys)
    assert cli.main(["train", "--resume", str(tmp_path / "cut"), "--json"]) == 0
    second = _rows(capsys.readouterr().out)
    assert _numbers(second)["finished"] == _numbers(full)["finished"]
    assert runs.read_run(str(tmp_path / "cut")).metrics["loss"] == full[-1]["metrics"]["loss"]


def test_resuming_a_finished_run_is_refused_and_leaves_it_as_it_was(project, tmp_path, capsys) -> None:
    """It ran validation again, appended a second finished row and replaced the metrics of
    status.json with a null loss; with --steps below its step it said step 12 of 5 steps."""
    run = tmp_path / "run"
    assert cli.main(["train", project, "--steps", "3", *FLAGS, "--out", str(run)]) == 0
    capsys.readouterr()
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    assert cli.main(["train", "--resume", str(run)]) == 2
    err = capsys.readouterr().err
    assert "already finished its 3 steps" in err and "--steps" in err
    assert cli.main(["train", "--resume", str(run), "--steps", "2", "--json"]) == 2
    row = _rows(capsys.readouterr().out)[-1]
    assert row["event"] == "failed" and "at step 3, beyond the 2 steps" in row["message"]
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    assert cli.main(["train", "--resume", str(run), "--steps", "4", "--json"]) == 0  # more steps: goes on
    assert _rows(capsys.readouterr().out)[-1]["event"] == "finished"


def test_a_refused_resume_leaves_a_stopped_run_resumable(project, tmp_path, capsys, monkeypatch) -> None:
    run = tmp_path / "run"
    _stopped_run(project, run, 6, 3, monkeypatch, capsys)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    assert cli.main(["train", "--resume", str(run), "--data", str(tmp_path / "gone.npz")]) == 2
    assert "gone.npz: no such file" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    assert runs.read_run(str(run)).status == "stopped"


def test_a_checkpoint_of_another_graph_is_refused_naming_the_keys(project, tmp_path, capsys) -> None:
    """It was an "internal error ... (please report this)" with torch's load_state_dict dump, exit 1."""
    run = tmp_path / "run"
    assert cli.main(["train", project, "--steps", "2", *FLAGS, "--out", str(run)]) == 0
    path = run / "checkpoints" / "last.pt"
    data = torch.load(path, weights_only=True)
    data["model"] = {("g" + k if k.startswith("h.") else k): v for k, v in data["model"].items()}
    torch.save(data, path)
    capsys.readouterr()
    assert cli.main(["train", "--resume", str(run), "--steps", "4"]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and f"--resume {run}" in err
    assert "does not fit the run's graph" in err and "h.weight" in err and "gh.weight" in err


@pytest.mark.parametrize("key", ["optimizer", "rng", "step"])
def test_a_checkpoint_missing_a_part_is_refused_naming_it(project, tmp_path, capsys, key) -> None:
    run = tmp_path / "run"
    assert cli.main(["train", project, "--steps", "2", *FLAGS, "--out", str(run)]) == 0
    path = run / "checkpoints" / "last.pt"
    data = torch.load(path, weights_only=True)
    del data[key]
    torch.save(data, path)
    capsys.readouterr()
    assert cli.main(["train", "--resume", str(run), "--steps", "4"]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and repr(key) in err and "cannot continue" in err


def test_a_resume_keeps_the_optimizer_and_takes_a_new_learning_rate(project, tmp_path, capsys) -> None:
    """--optimizer sgd on an adam run failed with "internal error: KeyError: 'momentum'"; --lr was
    silently dropped (the checkpoint's schedule put the old rate back)."""
    run = tmp_path / "run"
    assert cli.main(["train", project, "--steps", "2", *FLAGS, "--out", str(run)]) == 0
    capsys.readouterr()
    assert cli.main(["train", "--resume", str(run), "--steps", "4", "--optimizer", "sgd"]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and "trained with --optimizer adam" in err
    assert cli.main(["train", "--resume", str(run), "--steps", "4", "--lr", "0.5", "--log-every", "1",
                     "--json"]) == 0
    steps = [r for r in _rows(capsys.readouterr().out) if r["kind"] == "step"]
    assert [r["lr"] for r in steps] == [0.5, 0.5]


def test_a_project_given_with_resume_must_be_the_runs_graph(project, tmp_path, capsys) -> None:
    """FILE was ignored: `train other.revs --resume RUN` silently trained RUN's graph."""
    run = tmp_path / "run"
    assert cli.main(["train", project, "--steps", "2", *FLAGS, "--out", str(run)]) == 0
    other = json.loads(json.dumps(PROJECT))
    other["nodes"][-2]["params"]["out_features"] = 4
    (tmp_path / "other.revs").write_text(json.dumps(other))
    capsys.readouterr()
    assert cli.main(["train", str(tmp_path / "other.revs"), "--resume", str(run), "--steps", "4"]) == 2
    err = capsys.readouterr().err
    assert "other.revs is not the graph that run trains" in err and "leave FILE out" in err
    moved = json.loads(json.dumps(PROJECT))  # the same network, moved about and renamed: fine
    moved["name"], moved["nodes"][0]["pos"] = "renamed", [100, 40]
    (tmp_path / "moved.revs").write_text(json.dumps(moved))
    assert cli.main(["train", str(tmp_path / "moved.revs"), "--resume", str(run), "--steps", "4", "--json"]) == 0
    assert _rows(capsys.readouterr().out)[-1]["event"] == "finished"


@pytest.mark.parametrize("steps", [12, 4])
def test_a_stop_during_validation_is_validated_again_on_resume(project, tmp_path, capsys, monkeypatch, steps) -> None:
    """The validation a stop cut short was lost: the resumed run went on from the next step, so
    the val row of step 4 was missing; at the last step the run said finished without it."""
    from revstudio.training import session

    assert cli.main(["train", project, "--steps", str(steps), *FLAGS, "--out", str(tmp_path / "full")]) == 0
    full = _rows(capsys.readouterr().out)
    real, done = loop._allreduce, [0]

    def counting(values, dist, device):
        done[0] += 1
        return real(values, dist, device)

    class SignalAfterStep4(session.StopFlag):  # arrives while step 4 validates
        def __call__(self) -> bool:
            return done[0] >= 4

    monkeypatch.setattr(loop, "_allreduce", counting)
    monkeypatch.setattr(session, "StopFlag", SignalAfterStep4)
    assert cli.main(["train", project, "--steps", str(steps), *FLAGS, "--out", str(tmp_path / "cut")]) == 0
    first = _rows(capsys.readouterr().out)
    assert first[-1]["event"] == "stopped" and first[-1]["step"] == 4
    assert runs.read_run(str(tmp_path / "cut")).status == "stopped"
    monkeypatch.undo()
    assert cli.main(["train", "--resume", str(tmp_path / "cut"), "--json"]) == 0
    second = _rows(capsys.readouterr().out)
    assert _numbers(first + second) == _numbers(full)
