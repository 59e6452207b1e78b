"""Every ``--json`` object, a command's report or its error, is written by the one NaN-safe writer.

A scripting probe found ``check``, ``plugins``, ``examples``, ``export`` and the error object
printing with plain ``json.dumps``, which writes NaN and Infinity as tokens jq rejects; the
other commands already mapped them to null (docs/cli.md). Now each goes through
``revstudio.training.runs.json_text``; the error object's documented shape is pinned here too.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from revstudio.cli import main
from revstudio.core.generate import revnet_chain
from revstudio.core.project import save
from revstudio.training import runs


def strict(text: str) -> Any:
    """``text`` parsed as jq would: NaN, Infinity and -Infinity are not JSON."""
    def refuse(token: str) -> None:
        raise ValueError(f"{token} is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def project(tmp_path: Path) -> str:
    path = str(tmp_path / "net.revs")
    save(revnet_chain(1, channels=4, size=4), path)
    return path


@pytest.fixture
def broken(tmp_path: Path) -> str:
    """A project whose Linear has an unknown parameter: a graph with errors (exit 1)."""
    doc = {"format": "revstudio", "version": 1, "name": "broken", "groups": {}, "training": {}, "view": {},
           "nodes": [{"id": "x", "type": "Input", "params": {"shape": [4]}},
                     {"id": "l", "type": "Linear", "params": {"out_features": 2, "colour": 1}},
                     {"id": "y", "type": "Output", "params": {}}],
           "edges": [["x.out", "l.in"], ["l.out", "y.in"]]}
    path = tmp_path / "broken.revs"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def _commands(project: str, broken: str, tmp: Path) -> dict[str, list[str]]:
    (tmp / "runs").mkdir(exist_ok=True)
    return {
        "check": ["check", project, "--json"],
        "check (errors)": ["check", broken, "--json"],
        "plugins": ["plugins", "--json"],
        "examples": ["examples", "--json"],
        "examples NAME": ["examples", "revnet_wired", "--json"],
        "export": ["export", project, "-o", str(tmp / "out.py"), "--json"],
        "export (errors)": ["export", broken, "-o", str(tmp / "out2.py"), "--json"],
        "runs": ["runs", str(tmp / "runs"), "--json"],
        "version": ["--version", "--json"],
        "usage error": ["check", str(tmp / "missing.revs"), "--json"],
        "gradcheck (errors)": ["gradcheck", broken, "--json"],
        "memory (errors)": ["memory", broken, "--json"],
    }


@pytest.mark.parametrize("name", ["check", "check (errors)", "plugins", "examples", "examples NAME", "export",
                                  "export (errors)", "runs", "version", "usage error", "gradcheck (errors)",
                                  "memory (errors)"])
def test_every_json_object_goes_through_the_one_writer(name: str, project: str, broken: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    written: list[str] = []
    real = runs.json_text

    def spy(value: Any) -> str:
        written.append(real(value))
        return written[-1]

    monkeypatch.setattr(runs, "json_text", spy)
    main(_commands(project, broken, tmp_path)[name])
    out = capsys.readouterr().out
    assert written == [out.strip()], f"{name}: printed without the NaN-safe writer"
    assert isinstance(strict(out), dict)


def test_a_plugins_nan_value_is_written_as_null(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from revstudio.clicmd import plugins

    listing = {"plugins": [{"entry_point": "p", "value": "p:SPECS", "distribution": "p", "version": float("nan"),
                            "builtin": False, "types": ["T"], "weight": float("inf")}], "problems": []}
    monkeypatch.setattr(plugins, "collect", lambda: listing)
    assert main(["plugins", "--json"]) == 0
    entry = strict(capsys.readouterr().out)["plugins"][0]
    assert entry["version"] is None and entry["weight"] is None


def test_checks_report_with_an_infinite_figure_is_strict_json(project: str, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from revstudio.core.check import Report

    to_json = Report.to_json
    monkeypatch.setattr(Report, "to_json", lambda self: {**to_json(self), "parameters": float("inf")})
    assert main(["check", project, "--json"]) == 0
    assert strict(capsys.readouterr().out)["parameters"] is None


@pytest.mark.parametrize("command", ["gradcheck", "memory"])
def test_a_graph_with_errors_is_the_documented_error_object_with_exit_1(
        command: str, broken: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, broken, "--json"]) == 1
    data = strict(capsys.readouterr().out)
    assert set(data) == {"error", "exit_code"} and data["exit_code"] == 1
    assert "the graph has errors" in data["error"] and "colour" in data["error"]


def test_the_error_object_of_exit_1_is_documented() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    assert '`{"error": "<message>", "exit_code": 1}`' in text
