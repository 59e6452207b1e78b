"""``revstudio check`` says what ``revstudio train`` would optimise and why, or why it refuses:
a valid graph whose flow a Conv breaks is no longer 'valid' with nothing said."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from revstudio.cli import main
from revstudio.core.generate import Builder
from revstudio.core.project import save

ROOT = Path(__file__).resolve().parents[1]


def flow(tmp_path: Path, breaker: bool) -> str:
    b = Builder("flow")
    b.node("Input", "x", shape=[4, 4, 4])
    ids = [b.node("ActNorm", "an")]
    if breaker:
        ids.append(b.node("Conv", "conv", out_channels=4, kernel_size=3, padding="same"))
    ids.append(b.node("InvConv1x1", "inv"))
    b.chain("x", *ids, b.node("Output", "z"))
    path = tmp_path / f"flow{int(breaker)}.revs"
    save(b.graph, path)
    return str(path)


def test_check_names_the_task_and_the_node_that_breaks_a_flow(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", flow(tmp_path, breaker=False)]) == 0
    assert ("training task (auto): flow, negative log-likelihood in bits per dimension on 'z': the graph has a "
            "log-determinant (node 'an')") in capsys.readouterr().out
    broken = flow(tmp_path, breaker=True)
    assert main(["check", broken]) == 0  # the graph is valid; its flow run is what is refused
    out = capsys.readouterr().out
    assert "training task (auto): refused: " in out and "node 'conv' (Conv) is not" in out
    assert main(["check", broken, "--json"]) == 0
    task = json.loads(capsys.readouterr().out)["task"]
    assert task["requested"] == "auto" and "node 'conv' (Conv) is not" in task["error"]


def test_check_json_says_a_classifier_head_is_classification(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(ROOT / "resources" / "examples" / "digits_revnet.revs"), "--json"]) == 0
    task = json.loads(capsys.readouterr().out)["task"]
    assert task["kind"] == "classification" and task["loss"] == "cross-entropy" and "class scores" in task["why"]


def test_check_says_why_a_flow_with_two_outputs_trains_as_no_flow(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    b = Builder("two-scale")
    b.node("Input", "x", shape=[4, 4, 4])
    b.chain("x", b.node("ActNorm", "an"), b.node("Split", "s", sections=2))
    b.node("Output", "z0")
    b.node("Output", "z1")
    b.graph.connect("s.out0", "z0.in")
    b.graph.connect("s.out1", "z1.in")
    path = tmp_path / "two.revs"
    save(b.graph, path)
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert ("training task (auto): regression, mse on 'z0': 'z0' reads 2x4x4, no class scores and not a flow: "
            "the graph has a log-determinant (node 'an') and its 2 Outputs (z0, z1) hold the Inputs' 64 values "
            "together") in out
    assert "join them with a Concat (dim 0) before a single Output" in out
