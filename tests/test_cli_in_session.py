"""``cli.main`` called in a session (a notebook, a script) leaves the caller's ``sys.stdout`` as it
found it; and ``check`` says an empty project is empty, as ``rs.check`` does."""
from __future__ import annotations

import io
import json
import sys

from revstudio import cli
from revstudio.core.graph import Graph
from revstudio.core.project import save


def test_main_in_a_session_gives_stdout_its_error_handler_back(monkeypatch) -> None:
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict")
    monkeypatch.setattr(sys, "stdout", stream)
    assert cli.main(["--version"]) == 0
    assert sys.stdout is stream and stream.errors == "strict"


def test_check_of_an_empty_project_says_it_is_empty(tmp_path, capsys) -> None:
    path = tmp_path / "blank.revs"
    save(Graph("blank"), str(path))
    assert cli.main(["check", str(path), "--json"]) == 0  # a warning: a new project is not a mistake
    report = json.loads(capsys.readouterr().out)
    assert [(d["severity"], d["message"]) for d in report["diagnostics"]] == [
        ("warning", "the graph is empty: add an Input and an Output node")]
    assert cli.main(["check", str(path)]) == 0
    assert "the graph is empty: add an Input and an Output node" in capsys.readouterr().out
