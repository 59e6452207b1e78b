"""``rs.memory(..., depth=[...])``: the depth sweep of ``revstudio memory --depth`` from Python, the same
object as its ``--json``, its table as the repr, its refusals as ValueError in its words."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import revstudio as rs  # noqa: E402
from revstudio.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "resources" / "examples" / "revnet_coupling.revs")


@pytest.fixture(autouse=True)
def _few_threads() -> None:
    torch.set_num_threads(1)


def test_the_sweep_is_the_commands_json_and_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    sweep = rs.memory(EXAMPLE, batch=2, depth=[4, 1, 2])
    assert main(["memory", EXAMPLE, "--batch", "2", "--depth", "4,1,2", "--json"]) == 0
    # the sweep reports peaks, not timings: the whole object is the command's
    assert sweep.to_json() == json.loads(capsys.readouterr().out)
    assert main(["memory", EXAMPLE, "--batch", "2", "--depth", "4,1,2"]) == 0
    assert repr(sweep) == capsys.readouterr().out.rstrip("\n")
    assert sweep.node == "blocks" and sweep.depths == [1, 2, 4]
    assert sweep.peaks("reversible")[0] == sweep.peaks("reversible")[-1]  # flat
    assert sweep.growth("standard") == sweep.to_json()["bytes_per_block"]["standard"]["measured"] > 10_000
    digests = [row["network_digest"] for row in sweep.rows]
    assert len(set(digests)) == 3 and sweep.to_json()["versions"]["torch"] == torch.__version__


def test_a_graph_in_memory_is_swept_with_the_node_named() -> None:
    graph = rs.load(EXAMPLE)
    before = graph.nodes["blocks"].params["times"]
    sweep = rs.memory(graph, batch=2, depth=before + 1, depth_node="blocks")
    assert sweep.depths == [before + 1] and sweep.growth("standard") is None  # one depth: no slope
    assert graph.nodes["blocks"].params["times"] == before  # the caller's graph is left as it was
    assert "Repeat node blocks" in repr(sweep)


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"depth": [1, 2], "top": 3}, "depth= measures each depth's peaks only; leave out top="),
    ({"depth": [1, 2], "repeat": 2, "budget": "1MiB"}, "leave out budget= and repeat="),
    ({"depth_node": "blocks"}, "depth_node='blocks' names the Repeat node a depth sweep varies; add the depths, "
                               "e.g. depth=[1, 2, 4, 8]"),
    ({"depth": [1, 2], "modes": ["standard"]}, "depth= measures every mode at each depth; leave out modes="),
    ({"depth": [0, 2]}, "depth=[0, 2]: depth 0 is out of range"),
    ({"depth": [True]}, "True/False is not a depth"),
    ({"depth": "1,two"}, "depth 'two' is not a whole number"),
    ({"depth": [1, 2], "depth_node": "stem"}, "stem is a Conv node, not a Repeat"),
    ({"depth": [1, 2], "batch": 0}, "batch=0: 0 is too small"),
    ({"depth_node": ""}, "depth_node='' names the Repeat node"),  # (falsy names went on: 'NoneType' not iterable)
    ({"depth_node": 0}, "depth_node=0 names the Repeat node"),
    ({"modes": 5}, "modes=5: give a mode or a list of them"),  # ('int' object is not iterable)
])
def test_bad_sweeps_are_value_errors_in_the_commands_words(kwargs: dict, words: str) -> None:
    with pytest.raises(ValueError, match="rs.memory: |revnet_coupling.revs: ") as info:
        rs.memory(EXAMPLE, **kwargs)
    assert words in str(info.value), str(info.value)
