"""A run refused before it starts (a mistyped data path) leaves no run folder behind.

It left a folder holding a snapshot, config and a ``failed`` status at step 0, which
``revstudio runs`` and the app's Runs tab listed as a run. What was there before (a folder
the user made, their files in it) stays.
"""
from __future__ import annotations

import json
from pathlib import Path

from training_kit import EXAMPLES, linear_classifier

from revstudio import cli
from revstudio.core.project import save

FLAGS = ["--batch-size", "8", "--device", "cpu", "--steps", "1"]


def _project(tmp_path: Path) -> str:
    path = tmp_path / "clf.revs"
    save(linear_classifier(), path)
    return str(path)


def test_a_refused_run_leaves_no_folder_and_runs_lists_nothing(tmp_path, capsys) -> None:
    project = _project(tmp_path)
    assert cli.main(["train", project, "--data", "nosuch.npz", *FLAGS]) == 2
    assert "nosuch.npz: no such file" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # (the default runs/ folder was this attempt's too)
    out = tmp_path / "a" / "b"
    assert cli.main(["train", project, "--data", "nosuch.npz", *FLAGS, "--out", str(out), "--json"]) == 2
    row = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert row["event"] == "failed" and row["exit_code"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clf.revs"]
    assert cli.main(["runs", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == []


def test_a_refused_run_keeps_what_was_in_its_folder_before(tmp_path, capsys) -> None:
    project, mine = _project(tmp_path), tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    assert cli.main(["train", project, "--data", "nosuch.npz", *FLAGS, "--out", str(mine)]) == 2
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["train", project, "--data", "nosuch.npz", *FLAGS, "--out", str(empty)]) == 2
    assert empty.is_dir() and not list(empty.iterdir())  # the user's folder stays, empty as it was


def test_a_run_that_fails_after_it_started_keeps_its_folder(tmp_path, capsys) -> None:
    """A run that started (its ``started`` row went out) and then failed is a run: its folder says why."""
    project = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))
    run = tmp_path / "run"
    code = cli.main(["train", project, "--steps", "20", "--lr", "1e30", "--optimizer", "sgd", "--batch-size", "8",
                     "--device", "cpu", "--gradcheck-every", "0", "--memory-every", "0", "--val-every", "0",
                     "--out", str(run)])
    assert code == 1 and "non-finite" in capsys.readouterr().out
    assert json.loads((run / "status.json").read_text())["status"] == "failed"


def test_a_run_named_by_revstudio_never_shares_its_folder(tmp_path, capsys, monkeypatch) -> None:
    """Runs of a sweep started in parallel pick their names in the same second: one that found its
    picked folder made by another in the meantime trained into it, beside the other run."""
    from revstudio.training import session

    project, taken = _project(tmp_path), tmp_path / "runs" / "clf-20260101-000000"
    taken.mkdir(parents=True)  # (the other run's, made just after this one picked the name)
    monkeypatch.setattr(session, "default_run_dir", lambda source: str(taken))
    assert cli.main(["train", project, "--data", "synthetic", *FLAGS, "--json"]) == 0
    started = next(r for r in map(json.loads, capsys.readouterr().out.splitlines()) if r.get("event") == "started")
    assert started["run_dir"] == f"{taken}-2" and not list(taken.iterdir())
    assert cli.main(["train", project, "--data", "nosuch.npz", *FLAGS]) == 2  # refused: its claimed folder goes
    assert sorted(p.name for p in taken.parent.iterdir()) == [taken.name, f"{taken.name}-2"]


def test_a_network_without_weights_is_refused_naming_what_to_do(tmp_path, capsys) -> None:
    """A graph of weightless layers (a plugin's new layer tried alone) has nothing to train: it was
    an internal error (torch's optimizer: 'empty parameter list') after the run folder was made."""
    from revstudio.core.graph import Graph

    graph = Graph(name="weightless")
    graph.add_node("Input", "x", {"shape": [4, 4, 4]})
    graph.add_node("Flatten", "flat")
    graph.add_node("Output", "o")
    graph.connect("x.out", "flat.in")
    graph.connect("flat.out", "o.in")
    path = tmp_path / "weightless.revs"
    save(graph, path)
    assert cli.main(["train", str(path), *FLAGS]) == 1
    err = capsys.readouterr().err
    assert "internal error" not in err
    assert "no weights to train" in err and "revstudio gradcheck" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["weightless.revs"]
