"""``revstudio check`` says which axis a recurrent node reads as time, beside its shapes: a sequence
drawn as (time, features) fits a BiRNN's shape rule and trains on the wrong axis unless it is said."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from revstudio.cli import main
from revstudio.core.graph import Graph
from revstudio.core.project import save


def _project(tmp_path: Path, shape: list[int], birnn: bool = True) -> str:
    g = Graph("seq")
    g.add_node("Input", "x", {"shape": shape}, (0, 0))
    g.add_node("BiRNN" if birnn else "Conv", "rnn", {"hidden_size": 4} if birnn else {"out_channels": 4}, (240, 0))
    g.add_node("Output", "y", {}, (480, 0))
    g.connect("x.out", "rnn.in")
    g.connect("rnn.out", "y.in")
    path = str(tmp_path / "seq.revs")
    save(g, path)
    return path


def test_the_text_report_says_how_a_birnn_reads_its_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", _project(tmp_path, [8, 64])]) == 0
    out = capsys.readouterr().out
    assert "how recurrent nodes read their input:\n  rnn (BiRNN) reads 64 steps of 8 features (time is the last axis)\n" \
        in out
    assert main(["check", _project(tmp_path, [8, 64], birnn=False)]) == 0
    assert "recurrent" not in capsys.readouterr().out


def test_the_json_report_has_it_on_the_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", _project(tmp_path, [64, 8]), "--json"]) == 0
    nodes = json.loads(capsys.readouterr().out)["nodes"]
    assert nodes["rnn"]["reads"] == "8 steps of 64 features (time is the last axis)"
    assert "reads" not in nodes["x"]
