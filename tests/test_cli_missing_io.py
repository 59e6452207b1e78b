"""A project without an Output (or an Input) node is refused by ``train``, ``gradcheck`` and
``memory`` with what is missing and where to add it, as the editor's Train says it: a student who
deleted the Output node got "needs at least one Input and one Output node to run"."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from revstudio.cli import main

ROOT = Path(__file__).resolve().parents[1]
DIGITS = ROOT / "resources" / "examples" / "digits_revnet.revs"


def _without(tmp_path: Path, node_type: str) -> Path:
    project = json.loads(DIGITS.read_text(encoding="utf-8"))
    gone = {n["id"] for n in project["nodes"] if n["type"] == node_type}
    project["nodes"] = [n for n in project["nodes"] if n["id"] not in gone]
    project["edges"] = [e for e in project["edges"] if not {e[0].split(".")[0], e[1].split(".")[0]} & gone]
    project["training"]["data"] = str(ROOT / "resources" / "data" / "digits.npz")
    path = tmp_path / f"no_{node_type.lower()}.revs"
    path.write_text(json.dumps(project), encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["train", "gradcheck", "memory"])
def test_no_output_node_names_the_output_to_wire(command: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = _without(tmp_path, "Output")
    assert main([command, str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}: the graph has no Output node:" in err
    assert "add an Output node and wire head.out (which nothing reads) into it" in err, err


def test_an_empty_project_says_to_draw_a_network(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.revs"
    path.write_text(json.dumps({"format": "revstudio", "version": 1, "name": "empty", "nodes": [], "edges": []}),
                    encoding="utf-8")
    assert main(["memory", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}: the project is empty: draw a network (an Input node, layers, an Output node) first" in err, err
