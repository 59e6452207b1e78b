"""``python -m revstudio.codegen.serve``: the editor's export worker protocol."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from revstudio.codegen.serve import handle, serve  # noqa: E402
from revstudio.core.project import dumps, load  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "resources" / "examples" / "revnet_wired.revs"


def _request(ident, project: str, with_training: bool = False) -> str:
    return json.dumps({"id": ident, "project": project, "with_training": with_training})


def test_a_request_gets_the_export() -> None:
    from revstudio.codegen import export

    graph = load(EXAMPLE)
    reply = handle(_request(3, dumps(graph)))
    assert reply == {"id": 3, "ok": True, "source": export(graph)}


def test_graph_problems_come_back_as_a_commented_explanation_naming_the_node() -> None:
    text = EXAMPLE.read_text(encoding="utf-8").replace('"out_channels": 8', '"out_channels": -8', 1)
    assert text != EXAMPLE.read_text(encoding="utf-8")
    reply = handle(_request(4, text))
    assert reply["id"] == 4 and reply["ok"] is False
    assert reply["source"].startswith("# No export yet")
    assert "out_channels" in reply["source"]


def test_unreadable_requests_are_answered_not_fatal() -> None:
    assert handle("not json")["ok"] is False
    assert handle('{"id": 1}')["source"].startswith("# The exporter got a request it cannot read")
    reply = handle(_request(2, "{ broken"))
    assert reply["id"] == 2 and reply["source"].startswith("# The graph could not be prepared")


def test_serve_answers_every_line_in_order() -> None:
    project = dumps(load(EXAMPLE))
    requests = io.StringIO(_request(1, project) + "\n\n" + "junk\n" + _request(2, project, True) + "\n")
    replies = io.StringIO()
    assert serve(requests, replies) == 0
    lines = [json.loads(line) for line in replies.getvalue().splitlines()]
    assert [r["id"] for r in lines] == [1, None, 2]
    assert "def train(" in lines[2]["source"] and "def train(" not in lines[0]["source"]
    assert replies.getvalue().isascii()


def test_the_module_runs_as_a_process_and_ends_when_its_input_closes() -> None:
    project = dumps(load(EXAMPLE))
    proc = subprocess.run([sys.executable, "-m", "revstudio.codegen.serve"], input=_request(9, project) + "\n",
                          capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (line,) = proc.stdout.splitlines()
    reply = json.loads(line)
    assert reply["id"] == 9 and reply["ok"] and "class Model(nn.Module):" in reply["source"]
