"""Hostile project text: quotes, triple quotes, backslashes, newlines, unicode, keywords, code.

Nothing from a project file may become code. Ids, names and group names with
any of these must give a file that parses, passes ruff, runs nothing from the
project and reopens to the same document; that it also behaves exactly like the
compiled module is checked with the other cases in test_equivalence.py.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from codegen_harness import hostile_ids, names_for, renamed  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.core import generate  # noqa: E402
from revstudio.core.project import ProjectError, dumps, load, loads  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["wired", "coupling"])
def hostile_graph(request, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "pwned"
    base = generate.revnet_chain(2, channels=4, size=4, wired=request.param == "wired")
    return renamed(base, hostile_ids(marker), names_for(marker)), marker


def test_hostile_export_parses_lints_and_reopens(hostile_graph, tmp_path) -> None:
    graph, marker = hostile_graph
    source = export(graph)
    ast.parse(source)
    out = tmp_path / "model.py"
    out.write_text(source, encoding="utf-8")
    for config in (["--config", str(ROOT / "pyproject.toml")], ["--isolated"]):
        proc = subprocess.run([sys.executable, "-m", "ruff", "check", *config, str(out)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-3000:]
    assert dumps(load(out)) == dumps(graph)
    assert not marker.exists()
    # the payload survives only as data (string constants, comments), never as a name or call
    names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    attrs = {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute)}
    assert not {"__import__", "pathlib", "exec", "chr"} & names
    assert "touch" not in attrs


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")),
                        min_size=1, max_size=12).filter(lambda t: "." not in t), min_size=3, max_size=8),
       st.text(max_size=30))
def test_any_ids_and_names_export_to_valid_python_that_reopens(ids: list[str], name: str) -> None:
    base = generate.revnet_chain(1, channels=4, size=4, wired=False)  # has groups
    names = {"project": name, "group": ids[0][:40] + "grp", "output": name}
    try:
        graph = renamed(base, ids, names)
    except ProjectError:
        reject()  # hypothesis learns to avoid ids the project format refuses
    source = export(graph)
    tree = ast.parse(source)
    assert dumps(loads(_embedded(tree))) == dumps(graph)
    namespace: dict[str, object] = {"__name__": "exported"}
    exec(compile(tree, "exported.py", "exec"), namespace)  # our generated code; ids are only data in it
    model = namespace["Model"]()  # type: ignore[operator]
    assert model(torch.randn(2, 4, 4, 4)).shape == (2, 10)


def _embedded(tree: ast.Module) -> str:
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and getattr(stmt.targets[0], "id", "") == "REVSTUDIO_PROJECT":
            return stmt.value.value  # type: ignore[attr-defined]
    raise AssertionError("no REVSTUDIO_PROJECT")


def test_export_is_deterministic_and_leaves_the_random_stream_alone() -> None:
    graph = generate.revnet_chain(2, channels=4, size=4, wired=False)
    torch.manual_seed(5)
    state = torch.get_rng_state()
    first = export(graph)
    assert torch.equal(torch.get_rng_state(), state)
    assert export(graph) == first
