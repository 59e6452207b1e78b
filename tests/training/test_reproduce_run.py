"""Reproducing a run from its folder alone, as a paper's reviewer does: what the folder says was trained
(network and data digests, the environment), training its snapshot again when the data moved, and
``revstudio runs A B`` saying what differs between two runs and whether their losses are the same."""
from __future__ import annotations

import json
import shutil

import numpy as np
import torch
from training_kit import EXAMPLES

from revstudio import cli
from revstudio.core.digest import network_digest
from revstudio.core.project import load
from revstudio.training import runs

TWO_BRANCH = str(next(p for p in EXAMPLES if p.stem == "two_branch"))
STEPS = ["--steps", "4", "--batch-size", "8", "--device", "cpu", "--log-every", "1"]


def _data(folder, samples: int = 48) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    path = folder / "d.npz"
    np.savez(path, x=rng.normal(size=(samples, 3, 8, 8)).astype("float32"), y=rng.integers(0, 4, samples))
    return str(path)


def _train(out, data: str, *more: str) -> None:
    assert cli.main(["train", TWO_BRANCH, *STEPS, "--data", data, "--out", str(out), *more]) == 0


def test_a_run_records_the_digests_of_its_network_and_data(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    _train(out, _data(tmp_path / "data"))
    started = next(r for r in runs.read_metrics(str(out)) if r.get("event") == "started")
    saved = torch.load(out / "checkpoints" / "last.pt", weights_only=True)
    assert started["network_digest"] == network_digest(load(TWO_BRANCH))
    assert started["data_digest"] == f"blake2b:{saved['data']['digest']}"
    status = json.loads((out / "status.json").read_text())
    assert (status["network_digest"], status["data_digest"]) == (started["network_digest"], started["data_digest"])
    env = json.loads((out / "environment.json").read_text())
    assert env["cwd"] and env["threads"] == torch.get_num_threads()


def _grouped(out: str, key: str) -> dict[str, set[str]]:
    """``{value: {runs}}`` of the comparison's line for ``key`` (``  lr  0.001 (a, b); 0.05 (c)``)."""
    line = next(x for x in out.splitlines() if x.startswith(f"  {key}  "))
    groups = [g.strip() for g in line.split(None, 1)[1].split(";")]
    return {g.split(" (")[0]: set(g.split(" (", 1)[1].rstrip(")").split(", ")) for g in groups}


def test_runs_in_two_folders_are_compared_setting_by_setting_and_loss_by_loss(tmp_path, capsys) -> None:
    data = _data(tmp_path / "data")
    paper, mine, other = tmp_path / "paper" / "run", tmp_path / "mine" / "run", tmp_path / "mine" / "lr"
    _train(paper, data)
    _train(mine, data)
    _train(other, data, "--lr", "0.05")
    capsys.readouterr()
    assert cli.main(["runs", str(paper), str(tmp_path / "mine")]) == 0
    out = capsys.readouterr().out
    names = [str(paper), str(mine)]  # (two runs named "run": each shown by its path)
    assert _grouped(out, "lr") == {"0.001": {names[0], names[1]}, "0.05": {"lr"}}, out
    if out.index(f"{names[0]}  ") < out.index("lr  "):  # (runs started the same second are listed by name)
        assert f"  {names[0]}, {names[1]}: identical (4 rows)" in out, out
        assert f"  lr: part from {names[0]} at step 2 (loss " in out, out  # (step 1: the same first weights)
    else:
        assert f"  {names[0]}, {names[1]}: part from lr at step 2 (loss " in out, out
    assert cli.main(["runs", str(paper), str(mine), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["differ"] == {}  # (same settings, network, data and environment)
    assert [g["runs"] for g in listed["same_rows"]] == [names]
    assert listed["runs"][0]["network_digest"] == network_digest(load(TWO_BRANCH))
    assert cli.main(["runs", str(tmp_path / "mine")]) == 0  # one folder: a listing, compared when asked
    assert "what differs" not in capsys.readouterr().out
    assert cli.main(["runs", str(tmp_path / "mine"), "--compare"]) == 0
    assert _grouped(capsys.readouterr().out, "lr") == {"0.001": {"run"}, "0.05": {"lr"}}


def test_a_shipped_run_whose_data_moved_is_retrained_with_data_and_reproduces(tmp_path, capsys) -> None:
    paper = tmp_path / "paper" / "run"
    _train(paper, _data(tmp_path / "authors_data"))
    shutil.rmtree(tmp_path / "authors_data")  # (the reviewer has the data elsewhere)
    moved = _data(tmp_path / "reviewer")
    digest = json.loads((paper / "status.json").read_text())["data_digest"]
    capsys.readouterr()
    again = tmp_path / "again"
    assert cli.main(["train", str(paper / "project.revs"), "--out", str(again)]) == 2
    err = capsys.readouterr().err
    assert "is a run's snapshot, and its data path is where that run read them" in err, err
    assert "--data PATH" in err and digest in err, err
    assert not again.exists()
    assert cli.main(["train", str(paper), "--out", str(again)]) == 2
    assert f"train its snapshot: revstudio train {paper / 'project.revs'}" in capsys.readouterr().err
    assert cli.main(["train", str(paper / "project.revs"), "--data", moved, "--out", str(again)]) == 0
    capsys.readouterr()
    assert cli.main(["runs", str(paper), str(again), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert set(listed["differ"]) == {"data"}  # (the path: the same tensors, by their digest)
    assert [g["runs"] for g in listed["same_rows"]] == [["run", "again"]]


def test_a_resume_that_stretches_the_schedule_says_its_losses_are_not_the_longer_runs(tmp_path, capsys) -> None:
    """--steps 4 then --resume --steps 8 re-plans a cosine schedule from step 5: the learning rate jumps
    back up, silently, and the losses were not those of an 8-step run."""
    data = _data(tmp_path / "data")
    cosine, constant = tmp_path / "cosine", tmp_path / "constant"
    _train(cosine, data, "--schedule", "cosine", "--lr", "0.01")
    _train(constant, data)
    capsys.readouterr()
    assert cli.main(["train", "--resume", str(cosine), "--steps", "8"]) == 0
    note = ("note: the cosine schedule spans the run's total steps, which this resume changes (4 -> 8): step 5 "
            "trains at lr 0.005 where the 4-step schedule had it at 0, so the losses from here are not those of "
            "a run started with 8 steps")
    assert note in capsys.readouterr().out
    assert cli.main(["train", "--resume", str(constant), "--steps", "8"]) == 0
    assert "schedule" not in capsys.readouterr().out
    notes = [r.get("schedule_note") for d in (cosine, constant) for r in runs.read_metrics(str(d))
             if r.get("event") == "started"]
    assert notes == [None, note.removeprefix("note: "), None, None]


def test_a_project_whose_data_path_names_nothing_says_which_key_holds_it(tmp_path, capsys) -> None:
    """'/home/me/proj/../data/d.npz: no such file' named neither the project nor its training key."""
    doc = json.loads(open(TWO_BRANCH, encoding="utf-8").read())
    doc["training"] = {"version": 1, "data": "../data/d.npz"}
    project = tmp_path / "proj" / "net.revs"
    project.parent.mkdir()
    project.write_text(json.dumps(doc), encoding="utf-8")
    assert cli.main(["train", str(project), *STEPS, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"revstudio: {project.parent / '../data/d.npz'}: no such file; the path is {project}'s "
                          f"training.data, and a relative one starts from the project's folder ({project.parent}): "
                          "put the data where it points, correct the path in the project (the app's Run > Run "
                          "Settings), or give --data PATH"), err
    assert cli.main(["train", str(project), *STEPS, "--data", str(tmp_path / "no.npz"), "--out",
                     str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == f"revstudio: {tmp_path / 'no.npz'}: no such file\n"  # (the path typed)
    app_run = tmp_path / "runs" / "net-1"  # the app's run: its snapshot, in the run's own folder
    app_run.mkdir(parents=True)
    doc["training"]["data"] = str(tmp_path / "data" / "d.npz")
    (app_run / "project.revs").write_text(json.dumps(doc), encoding="utf-8")
    assert cli.main(["train", str(app_run / "project.revs"), *STEPS, "--out", str(app_run)]) == 2
    assert capsys.readouterr().err == f"revstudio: {tmp_path / 'data' / 'd.npz'}: no such file\n"
