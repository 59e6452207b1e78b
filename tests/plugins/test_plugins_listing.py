"""``revstudio plugins`` as text: one line per plugin with its package and how many types it adds."""
from __future__ import annotations

import argparse
from typing import Any

import pytest

from revstudio.clicmd import plugins as command


def _entry(name: str, types: list[str]) -> dict[str, Any]:
    return {"entry_point": name, "value": f"{name}:SPECS", "distribution": f"rsp-{name}", "version": "1.0",
            "builtin": False, "types": types}


def test_counts_read_as_english(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A plugin with one type was listed as "1 node types"."""
    monkeypatch.setattr(command, "collect", lambda: {
        "plugins": [_entry("one", ["Solo"]), _entry("two", ["A", "B"])], "problems": []})
    assert command.run(argparse.Namespace(json=False)) == 0
    out = capsys.readouterr().out
    assert "rsp-one 1.0 (entry point 'one'): 1 node type\n  Solo\n" in out
    assert "rsp-two 1.0 (entry point 'two'): 2 node types\n  A, B\n" in out


def test_problems_that_skip_nothing_are_not_listed_as_skipped(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Every problem was printed after "skipped:", also a malformed ``examples`` whose type loaded."""
    odd = ("node type 'Solo': its example 1 gives one shape, (3, 4), where a shape per input port is meant: "
           "write ((3, 4),); revstudio's catalog tests leave its examples out until it is fixed")
    skipped = "node type 'Gone' skipped: its category must be text"
    monkeypatch.setattr(command, "collect", lambda: {
        "plugins": [_entry("one", ["Solo"])],
        "problems": [{"plugin": "rsp-one 1.0 (entry point 'one')", "message": odd},
                     {"plugin": "rsp-one 1.0 (entry point 'one')", "message": skipped}]})
    assert command.run(argparse.Namespace(json=False)) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3:] == ["problems:", f"  plugin rsp-one 1.0 (entry point 'one'): {odd}",
                          f"  plugin rsp-one 1.0 (entry point 'one'): {skipped}"], lines
    assert not any(line.startswith("skipped") for line in lines), lines
