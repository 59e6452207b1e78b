"""``revstudio memory FILE --depth``: peaks per mode against a Repeat node's depth, and growth per block."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from test_cli_doc_samples import fits, printed, sample, versions_masked  # noqa: E402

from revstudio.cli import main  # noqa: E402
from revstudio.core.generate import revnet_chain  # noqa: E402
from revstudio.core.project import load, save  # noqa: E402
from revstudio.diagnostics.depth_sweep import DepthError, parse_depths, slope  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "resources" / "examples" / "revnet_coupling.revs"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _json(capsys: pytest.CaptureFixture[str]) -> dict:
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1, out
    return json.loads(out[0])


def test_the_sweep_measures_each_depth_and_reversible_grows_by_next_to_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", str(EXAMPLE), "--batch", "2", "--depth", "4,1,2", "--json"]) == 0
    data = _json(capsys)
    assert data["node"] == "blocks" and data["depths"] == [1, 2, 4]
    assert [r["depth"] for r in data["rows"]] == [1, 2, 4]
    assert data["measured_with"] == "live tensor accounting"
    params = [r["parameters"] for r in data["rows"]]
    assert params[0] < params[1] < params[2]  # each copy has weights of its own
    for row in data["rows"]:
        for mode in ("standard", "reversible", "checkpoint"):
            m = row["modes"][mode]
            assert m["peak_bytes"] > 0
            assert abs(m["estimate_peak_bytes"] / m["peak_bytes"] - 1) < 0.02  # the estimate beside it
    growth = data["bytes_per_block"]
    standard = growth["standard"]["measured"]
    assert standard > 10_000  # standard mode keeps every block's activations
    assert abs(growth["reversible"]["measured"]) < 0.02 * standard
    assert 0 < growth["checkpoint"]["measured"] < standard
    # the slope is the least-squares one through the measured peaks
    peaks = [r["modes"]["standard"]["peak_bytes"] for r in data["rows"]]
    assert standard == round(slope([1, 2, 4], peaks))


def test_the_table_has_a_row_per_depth_and_the_growth_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", str(EXAMPLE), "--batch", "2", "--depth", "1,3", "--depth-node", "blocks"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "Repeat node blocks" in lines[0] and "batch 2" in lines[0]
    assert lines[1].startswith("  revstudio ")  # where it was measured (test_cli_memory_cited.py)
    header = lines[2].split()
    assert header[:2] == ["times", "parameters"] and "reversible" in header
    assert lines[3].split()[0] == "1" and lines[4].split()[0] == "3"
    assert "(est " in lines[3]
    assert lines[5].startswith("  growth per added block (least squares): standard +")


def test_a_project_without_a_repeat_is_refused_saying_how_to_make_one(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "flat.revs"
    save(revnet_chain(2, channels=4, size=4), path)
    assert main(["memory", str(path), "--depth", "1,2", "--json"]) == 2
    error = _json(capsys)["error"]
    assert "no Repeat node" in error and "Edit > Repeat This Group" in error and "flat.revs" in error


def test_several_repeats_without_a_name_are_refused_naming_them(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    graph = load(EXAMPLE)
    graph.add_node("Repeat", "more", {"group": graph.nodes["blocks"].params["group"], "times": 1})
    graph.remove_edge(graph.edges_from("blocks", "out")[0])
    graph.connect("blocks.out", "more.in")
    graph.connect("more.out", "pool.in")
    path = tmp_path / "two.revs"
    save(graph, path)
    assert main(["memory", str(path), "--batch", "2", "--depth", "1,2", "--json"]) == 2
    error = _json(capsys)["error"]
    assert "2 Repeat nodes (blocks, more)" in error and "--depth-node blocks" in error
    # named, it runs; the other Repeat keeps its times
    assert main(["memory", str(path), "--batch", "2", "--depth", "1,2", "--depth-node", "more", "--json"]) == 0
    data = _json(capsys)
    assert data["node"] == "more" and len(data["rows"]) == 2


@pytest.mark.parametrize(("argv", "words"), [
    (["--depth", "1,2", "--depth-node", "stem"], "stem is a Conv node, not a Repeat"),
    (["--depth", "1,2", "--depth-node", "nope"], "no node 'nope'; its Repeat nodes are blocks"),
    (["--depth", "0,2"], "depth 0 is out of range"),
    (["--depth", "1,two"], "depth 'two' is not a whole number"),
    (["--depth-node", "blocks"], "add the depths, e.g. --depth 1,2,4,8"),
    (["--depth", "1,2", "--top", "3"], "leave out --top"),
    (["--depth", "1,2", "--repeat", "3"], "leave out --repeat"),
])
def test_bad_sweeps_are_refused_in_words(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", str(EXAMPLE), *argv, "--json"]) == 2
    data = _json(capsys)
    assert words in data["error"], data["error"]


def test_depths_are_read_sorted_once_each_and_the_slope_is_least_squares() -> None:
    assert parse_depths(" 8, 1,2,2 ,") == [1, 2, 8]
    with pytest.raises(DepthError, match="no depths given"):
        parse_depths(" , ")
    assert slope([1, 2, 3], [10, 20, 30]) == pytest.approx(10)
    assert slope([1, 2, 4], [5, 5, 5]) == pytest.approx(0)
    assert slope([1, 3], [0, 1]) == pytest.approx(0.5)
    assert slope([2], [7]) is None and slope([1, 2], [3, None]) is None


def test_the_docs_sample_is_what_the_sweep_prints(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    command = "revstudio memory resources/examples/revnet_coupling.revs --batch 4 --depth 1,2,4,8"
    out = printed(command.split()[1:], capsys)
    assert fits(versions_masked(sample(command)), versions_masked(out)), "\n".join(out)
