"""A run's label (label.json beside status.json): written atomically, read back by `revstudio runs`.

Runs were told apart only by their folders' timestamps; renaming a folder is no answer (a live
worker may be writing in it), so the label is a file of its own that the worker never touches.
"""
from __future__ import annotations

import json
import os

import pytest

from revstudio import cli
from revstudio.training import runs


def _run(root, name: str, status: str = "finished") -> str:
    path = os.path.join(root, name)
    os.makedirs(path)
    with open(os.path.join(path, runs.STATUS), "w", encoding="utf-8") as handle:
        json.dump({"status": status, "step": 40, "total_steps": 40, "metrics": {"loss": 0.25},
                   "started": "2026-12-06T21:51:34"}, handle)
    return path


def test_a_label_is_written_beside_the_status_and_listed_in_text_and_json(tmp_path, capsys) -> None:
    labelled = _run(tmp_path, "coupling-20261206-215134")
    _run(tmp_path, "coupling-20261206-220000")
    assert runs.write_label(labelled, "  lr 0.01,\n no norm ") == "lr 0.01, no norm"  # one line
    assert json.loads(open(os.path.join(labelled, runs.LABEL), encoding="utf-8").read()) == {"label": "lr 0.01, no norm"}
    assert sorted(os.listdir(labelled)) == [runs.LABEL, runs.STATUS]  # no temporary file left behind
    assert cli.main(["runs", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    line = next(ln for ln in text.splitlines() if ln.startswith("coupling-20261206-215134"))
    assert "lr 0.01, no norm" in line
    assert cli.main(["runs", str(tmp_path), "--json"]) == 0
    listed = {r["name"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    assert listed["coupling-20261206-215134"]["label"] == "lr 0.01, no norm"
    assert listed["coupling-20261206-220000"]["label"] is None


def test_an_empty_label_removes_it_and_a_gone_folder_is_a_clear_error(tmp_path) -> None:
    path = _run(tmp_path, "coupling-20261206-215134")
    runs.write_label(path, "baseline")
    assert runs.write_label(path, "   ") is None and runs.read_label(path) is None
    with pytest.raises(runs.RunDirError, match="label.json"):
        runs.write_label(os.path.join(tmp_path, "gone"), "x")
    assert not os.path.exists(os.path.join(tmp_path, "gone"))  # not made by the label
