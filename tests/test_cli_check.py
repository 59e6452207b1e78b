"""``revstudio check``: human table, one JSON object, exit codes 0/1/2, no tracebacks.

Covers the bad input files of issue 2 (truncated JSON, unknown types, negative
sizes, dangling edges, newer version, 10,000 nodes) end to end.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from scaling import NOT_QUADRATIC, growth

from revstudio.cli import main
from revstudio.core.generate import large_graph, revnet_chain
from revstudio.core.project import dumps, load, save

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def doc(nodes: list, edges: list, version: int = 1) -> str:
    return json.dumps({"format": "revstudio", "version": version, "name": "t", "nodes": nodes, "edges": edges,
                       "groups": {}, "training": {}, "view": {}})


@pytest.fixture
def revnet_file(tmp_path: Path) -> str:
    path = str(tmp_path / "revnet.revs")
    save(revnet_chain(2, channels=8, size=8), path)
    return path


def test_valid_file_prints_table_and_exits_0(revnet_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", revnet_file]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["node", "type", "outputs", "parameters"]
    assert "8x8x8" in out and "out0 4x8x8, out1 4x8x8" in out
    assert "b0_f_conv1" in out and "Conv" in out
    assert out.rstrip().endswith("valid")


def test_json_is_one_object_with_the_documented_schema(revnet_file: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", revnet_file, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)  # exactly one JSON document
    assert {"valid", "diagnostics", "nodes", "parameters"} <= set(data)
    assert set(data) <= {"valid", "diagnostics", "nodes", "parameters", "regions", "estimate", "task"}
    assert data["valid"] is True
    assert data["nodes"]["x"] == {"type": "Input", "outputs": {"out": [8, 8, 8]}, "parameters": 0}
    assert data["nodes"]["b0_split"]["outputs"] == {"out0": [4, 8, 8], "out1": [4, 8, 8]}
    conv = 4 * 4 * 3 * 3 + 4
    assert data["nodes"]["b0_f_conv1"]["parameters"] == conv
    assert data["parameters"] == 2 * 4 * conv + 8 * 10 + 10
    for d in data["diagnostics"]:
        assert set(d) == {"severity", "node", "port", "message", "nodes"}
        assert d["nodes"][:1] == ([d["node"]] if d["node"] else [])  # its own node first


def test_graph_with_errors_exits_1_naming_the_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "bad.revs", doc(
        [{"id": "x", "type": "Input", "params": {"shape": [4, 8]}}, {"id": "c", "type": "Conv2"},
         {"id": "y", "type": "Output"}], [["x.out", "c.in"], ["c.out", "y.in"]]))
    assert main(["check", path]) == 1
    out = capsys.readouterr().out
    assert "error" in out and "unknown node type 'Conv2'" in out and "Conv" in out
    assert "NOT valid" in out
    assert main(["check", path, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] is False and data["diagnostics"][0]["node"] == "c"


def test_negative_sizes_exit_1_naming_node_and_param(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "neg.revs", doc(
        [{"id": "x", "type": "Input", "params": {"shape": [-3, 8]}},
         {"id": "l", "type": "Linear", "params": {"out_features": -1}}, {"id": "y", "type": "Output"}],
        [["x.out", "l.in"], ["l.out", "y.in"]]))
    assert main(["check", path, "--json"]) == 1
    diags = json.loads(capsys.readouterr().out)["diagnostics"]
    where = {(d["node"], d["message"].split(":")[0]) for d in diags if d["severity"] == "error"}
    assert ("x", "parameter 'shape'") in where and ("l", "parameter 'out_features'") in where


@pytest.mark.parametrize("name,text,needle", [
    ("trunc.revs", '{"format": "revstudio", "version": 1, "nodes": [', "line"),
    ("newer.revs", doc([], [], version=99), "newer revstudio"),
    ("dangling.revs", doc([{"id": "x", "type": "Input"}], [["x.out", "zz.in"]]), "zz"),
    ("notjson.revs", "this is not a project", "trunc"),
])
def test_unreadable_files_exit_2_with_a_message_naming_the_place(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, needle: str) -> None:
    path = write(tmp_path, name, text)
    assert main(["check", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert name in captured.err and "Traceback" not in captured.err
    if needle != "trunc":
        assert needle in captured.err


def test_missing_file_and_json_error_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nope.revs")
    assert main(["check", missing, "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["exit_code"] == 2 and "nope.revs" in data["error"]


def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 2
    assert "FILE" in capsys.readouterr().err
    assert main(["check", "a.revs", "--frobnicate"]) == 2


@pytest.mark.slow
def test_ten_thousand_nodes_with_one_bad_value_exit_1_naming_it(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    graph = large_graph(10_000)
    last = list(graph.nodes)[-2]  # the last head's Linear
    graph.nodes[last].params["out_features"] = -5
    path = write(tmp_path, "big.revs", dumps(graph))
    assert main(["check", path, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert len(data["nodes"]) >= 9_000 and data["valid"] is False
    assert [d["node"] for d in data["diagnostics"] if d["severity"] == "error"] == [last]


def test_ten_thousand_nodes_with_a_dangling_edge_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(dumps(large_graph(10_000)))
    data["edges"].append(["x.out", "ghost.in"])
    path = write(tmp_path, "big.revs", json.dumps(data))
    assert main(["check", path]) == 2
    err = capsys.readouterr().err
    assert "big.revs" in err and "ghost" in err and "Traceback" not in err


def test_load_and_full_check_grow_linearly(tmp_path: Path) -> None:
    """What ``revstudio check`` does, at two sizes: 4x the nodes must cost about 4x, not 16x.

    The absolute target (2,000 nodes in under 0.5 s) is benchmarks/bench_check.py's.
    """
    from revstudio.core.check import check
    from revstudio.core.project import load
    from revstudio.diagnostics.check import full_check

    def prepare(n: int) -> Callable[[], object]:
        path = write(tmp_path, f"big{n}.revs", dumps(large_graph(n)))
        return lambda: full_check(load(path))

    report = check(load(write(tmp_path, "big.revs", dumps(large_graph(10_000)))))
    assert report.valid and len(report.order) == len(report.nodes) >= 9_000
    ratio = growth(prepare, 500)
    assert ratio < NOT_QUADRATIC, f"load + check of 4x the nodes took {ratio:.1f}x as long"


def _run_module(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "revstudio", "check", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)


def test_subprocess_valid_json_and_missing_file(revnet_file: str, tmp_path: Path) -> None:
    ok = _run_module(revnet_file, "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["valid"] is True
    gone = _run_module(str(tmp_path / "missing.revs"))
    assert gone.returncode == 2 and "missing.revs" in gone.stderr and "Traceback" not in gone.stderr


def test_subprocess_graph_errors_exit_1(tmp_path: Path) -> None:
    path = write(tmp_path, "cyc.revs", doc(
        [{"id": "x", "type": "Input", "params": {"shape": [4]}}, {"id": "a", "type": "Merge"},
         {"id": "b", "type": "Activation"}, {"id": "y", "type": "Output"}],
        [["x.out", "a.in0"], ["a.out", "b.in"], ["b.out", "a.in1"], ["b.out", "y.in"]]))
    res = _run_module(path)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "cycle" in res.stdout and "a -> b -> a" in res.stdout


def test_text_report_shows_regions_and_a_generic_estimate(revnet_file: str) -> None:
    from revstudio.clicmd.check import format_report
    from revstudio.core.check import check
    from revstudio.core.project import load

    class Region:
        def to_json(self) -> dict:
            return {"id": "r0", "nodes": ["a", "b", "c", "d", "e"], "inputs": ["x.out"], "outputs": ["e.out"]}

    class Estimate:  # no summary_lines(): the text falls back to the JSON's totals
        def to_json(self) -> dict:
            return {"batch": 1, "totals": {"standard": {"activation_bytes": 4096}}, "nodes": {"a": {}}}

    graph = load(revnet_file)
    report = check(graph)
    report.regions, report.estimate = [Region()], Estimate()
    text = format_report(report, revnet_file, graph)
    assert "r0: 5 nodes (a ... e); in x.out; out e.out" in text
    assert "batch: 1" in text and "standard: activation_bytes 4.0 KiB" in text
    assert "nodes" not in text.split("memory estimate:")[1]


def test_a_bf16_project_is_told_the_estimate_is_an_fp32_steps(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    graph = revnet_chain(2, channels=8, size=8)
    path = str(tmp_path / "r.revs")
    save(graph, path)
    assert main(["check", path]) == 0 and "autocast" not in capsys.readouterr().out
    graph.training = {"precision": "bf16"}
    save(graph, path)
    assert main(["check", path]) == 0
    assert ("  note: training.precision is bf16: the estimate models fp32 steps only; bf16 autocast is "
            "not modelled") in capsys.readouterr().out.splitlines()
    assert main(["check", path, "--json"]) == 0
    assert "bf16 autocast" in json.loads(capsys.readouterr().out)["estimate"]["precision_note"]


def test_a_training_section_train_would_refuse_is_said_with_its_key(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    graph = revnet_chain(2, channels=8, size=8)
    path = str(tmp_path / "r.revs")
    graph.training = {"lr": 0.01}
    save(graph, path)
    assert main(["check", path]) == 0 and "training section" not in capsys.readouterr().out
    assert main(["check", path, "--json"]) == 0 and "training" not in json.loads(capsys.readouterr().out)
    graph.training = {"lr": 0.01, "colour": "red"}
    save(graph, path)
    assert main(["check", path]) == 0  # the graph is valid; it is train that refuses the run (exit 2)
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("training section: training.colour: unknown key") and "train' refuses it" in line
               for line in lines), lines
    assert main(["check", path, "--json"]) == 0
    error = json.loads(capsys.readouterr().out)["training"]["error"]
    assert error.startswith("training.colour: unknown key")


def test_a_hostile_name_or_id_cannot_drive_the_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # ESC sequences (recolour, clear, move the cursor), a C1 CSI and a right-to-left override
    # from the file are shown as escapes in text output; --json escapes them itself
    graph = revnet_chain(1, channels=8, size=8)
    graph.name = "\x1b[2J\x1b[32mall fine"
    graph.rename_node("b0_split", "b\u202e0\x9b")
    path = str(tmp_path / "r.revs")
    save(graph, path)
    assert main(["check", path]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x9b" not in out and "\u202e" not in out
    assert "\\x1b[2J\\x1b[32mall fine: " in out and "b\\u202e0\\x9b" in out
    assert main(["check", path, "--json"]) == 0
    assert "b\u202e0\x9b" in json.loads(capsys.readouterr().out)["nodes"]
    graph.set_param("b\u202e0\x9b", "sections", 3)  # an error: gradcheck lists it, with the node, on stderr
    save(graph, path)
    assert main(["gradcheck", path]) == 1
    err = capsys.readouterr().err
    assert "\u202e" not in err and "\x9b" not in err and "b\\u202e0\\x9b" in err


def test_a_lone_surrogate_in_the_file_is_shown_not_a_crash(tmp_path: Path) -> None:
    # JSON may spell "\ud800" (half of a UTF-16 pair); no terminal encoding can write it, and the
    # text report ended in "internal error: UnicodeEncodeError"
    graph = revnet_chain(1, channels=8, size=8)
    graph.name = "half"
    text = dumps(graph).replace('"name": "half"', '"name": "half\\ud800"')
    proc = _run_module(write(tmp_path, "s.revs", text))
    assert proc.returncode == 0, proc.stderr
    assert "half\\ud800: " in proc.stdout and "internal error" not in proc.stderr


def test_training_data_whose_layout_train_would_refuse_is_said_with_the_transpose(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = load(str(ROOT / "resources" / "examples" / "birnn_sequence.revs"))
    graph.source = None  # (its paths below are written for seq.revs, as a graph built in code)
    path = str(tmp_path / "seq.revs")
    np = pytest.importorskip("numpy")
    np.savez(tmp_path / "good.npz", x=np.zeros((4, 12, 32), np.float32), y=np.zeros(4, np.int64))
    np.savez(tmp_path / "steps_first.npz", x=np.zeros((4, 32, 12), np.float32), y=np.zeros(4, np.int64))
    graph.training = {"data": "good.npz"}  # relative to the project's folder, as train reads it
    save(graph, path)
    assert main(["check", path]) == 0 and "training section" not in capsys.readouterr().out
    graph.training = {"data": "good.npz", "val_data": "steps_first.npz"}
    save(graph, path)
    assert main(["check", path]) == 0  # the graph is valid; train refuses the data (exit 2)
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("training section:"))
    assert "training.val_data: " in line and "steps_first.npz: array 'x' has samples of shape 32x12" in line
    assert "Input node 'sequence' expects 12x32" in line and "numpy.transpose(x, (0, 2, 1))" in line
    assert main(["check", path, "--json"]) == 0
    assert "numpy.transpose(x, (0, 2, 1))" in json.loads(capsys.readouterr().out)["training"]["error"]


def test_an_estimate_with_nodes_of_unknown_shape_says_it_counts_so_far(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A project whose plugin is missing printed "peak of a training step 0 B" for every mode, as if
    measured; the app's status bar says "so far" there."""
    graph = revnet_chain(1, channels=4, size=8, wired=True)
    first = next(n for n in graph.nodes if graph.nodes[n].type == "Conv")
    graph.set_param(first, "out_channels", 0)  # an error: this node and those after it have no shapes
    path = tmp_path / "broken.revs"
    save(graph, str(path))
    assert main(["check", str(path)]) == 1
    text = capsys.readouterr().out
    (line,) = [s for s in text.splitlines() if s.startswith("  so far: ")]
    assert line.startswith(f"  so far: {first}") and line.endswith("not counted; fix the errors above")
    save(revnet_chain(1, channels=4, size=8, wired=True), str(tmp_path / "ok.revs"))
    capsys.readouterr()
    assert main(["check", str(tmp_path / "ok.revs")]) == 0
    assert "so far" not in capsys.readouterr().out
