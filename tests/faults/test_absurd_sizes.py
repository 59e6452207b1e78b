"""Absurd sizes are warned about by ``check`` and refused by ``memory``/``gradcheck``, in seconds.

Before, they passed ``check`` silently and then made the runs allocate until the
allocator failed, or build layers for minutes. Everything here comes from the
static sizes: nothing is compiled or allocated.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from absurd_projects import absurd_projects

from revstudio.core.project import loads
from revstudio.diagnostics.check import full_check
from revstudio.diagnostics.sizes import LAYER_LIMIT, fit_problem, measure

ROOT = Path(__file__).resolve().parents[2]
PROJECTS = absurd_projects()

# what check must say about each (the node it names, words of the message)
WARNED = {
    "overflow": ("x", "EiB per sample"),
    "repeat_256x256": ("r", "65,538 layers"),
    "nested_couplings": ("top", "1,048,578 layers"),
    "huge_invconv": ("w", "1,099,513,724,930 parameters (4.0 TiB)"),
}


@pytest.mark.parametrize("name", sorted(WARNED))
def test_check_warns_with_the_node_and_the_size(name: str) -> None:
    report = full_check(loads(PROJECTS[name]))
    node, words = WARNED[name]
    found = [d for d in report.warnings if d.node == node and words in d.message]
    assert found, [str(d) for d in report.diagnostics]


def test_sizes_are_exact_integers_never_wrapped() -> None:
    sizes = measure(loads(PROJECTS["overflow"]), full_check(loads(PROJECTS["overflow"])))
    assert sizes.tensor_elements == 2 ** 60 and sizes.tensor_node == "x"
    assert measure(loads(PROJECTS["nested_couplings"]),
                   full_check(loads(PROJECTS["nested_couplings"]))).layers == 2 ** 20 + 2


def test_fit_names_the_node_and_the_bytes() -> None:
    graph = loads(PROJECTS["input_16gb"])
    report = full_check(graph)
    problem = fit_problem(graph, report, batch=4, dtype="float32", available=64 << 30)
    assert problem is not None and "c's output of 128.0 GiB at batch 4" in problem and "64.0 GiB" in problem
    assert fit_problem(graph, report, batch=1, dtype="float32", available=1 << 50) is None
    deep = loads(PROJECTS["repeat_256x256"])
    assert f"more than {LAYER_LIMIT:,}" in (fit_problem(deep, full_check(deep), 1, "float32", None) or "")


RUNNER = r'''
import contextlib, io, json, resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from revstudio import cli
results = {}
for path in sys.argv[2:]:
    for command in ("memory", "gradcheck"):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main([command, path])
        results[f"{command} {path}"] = [code, out.getvalue() + err.getvalue(), "torch" in sys.modules]
print(json.dumps(results))
'''


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is what bounds memory on Linux")
def test_memory_and_gradcheck_refuse_under_a_memory_limit(tmp_path: Path) -> None:
    paths = []
    for name, text in PROJECTS.items():
        path = tmp_path / f"{name}.revs"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-P", "-c", RUNNER, str(1 << 30), *paths], capture_output=True,
                          text=True, env=env, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    for key, (code, text, _torch) in results.items():
        assert code == 1, (key, text)
        assert "Traceback" not in text and "internal error" not in text, (key, text)
        assert "needs at least" in text or "layers" in text, (key, text)
        assert "1.0 GiB" in text or "layers" in text, (key, text)  # the limit it runs under is what counts
    assert not any(torch_loaded for _c, _t, torch_loaded in results.values())  # refused before importing torch


@pytest.mark.parametrize("name", ["repeat_256x256", "nested_couplings"])
def test_check_of_a_graph_beyond_the_layer_limit_skips_the_estimate_and_says_so(
        name: str, tmp_path: Path) -> None:
    # The estimate simulates a step layer by layer: for 65,538 layers that took minutes in
    # `revstudio check` (and would on every edit in the editor).
    path = tmp_path / f"{name}.revs"
    path.write_text(PROJECTS[name], encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-P", "-m", "revstudio", "check", str(path), "--json"],
                          capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    assert "estimate" not in data
    assert any("no memory estimate is made" in d["message"] for d in data["diagnostics"])


def test_groups_nested_thousands_deep_are_one_error_not_a_failed_size_check() -> None:
    depth = 3000
    groups = {}
    for i in range(depth):
        inner = ({"id": "n", "type": "Group", "params": {"group": f"g{i + 1}"}} if i < depth - 1
                 else {"id": "n", "type": "Linear", "params": {"out_features": 4}})
        groups[f"g{i}"] = {"nodes": [{"id": "i", "type": "GroupInput"}, inner, {"id": "o", "type": "GroupOutput"}],
                           "edges": [["i.out", "n.in"], ["n.out", "o.in"]]}
    doc = {"format": "revstudio", "version": 1, "groups": groups,
           "nodes": [{"id": "x", "type": "Input", "params": {"shape": [4]}},
                     {"id": "g", "type": "Group", "params": {"group": "g0"}}, {"id": "y", "type": "Output"}],
           "edges": [["x.out", "g.in"], ["g.out", "y.in"]]}
    report = full_check(loads(json.dumps(doc)))
    assert [d.node for d in report.diagnostics] == ["g"], [d.message[-200:] for d in report.diagnostics]
    assert "nested more than 32 deep" in report.diagnostics[0].message
