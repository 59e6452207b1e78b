"""A plugin type saved from one package and provided here by another, inside group bodies.

The warning that names both packages was made while a body was checked, so it
reached only the body's own tab: ``check`` and the editor's Problems tab said
nothing for a Twin inside a Group, a Repeat or a coupling's F (nested too).
Now the project's list names each project node that runs such a body, and the inner node,
once per type: a body run by three nodes (or three nodes of that type) said the same
sentence three times.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from plugin_site import add_distribution, env_with, revstudio

TWIN = textwrap.dedent('''
    from revstudio.core.spec import NodeSpec

    def _same(ctx):
        return {"out": ctx.input("in")}

    SPECS = [NodeSpec(type_id="Twin", category="Plugins", help="Declared by two plugins, for the tests.",
                      params={}, inputs=("in",), outputs=("out",), infer=_same)]
''')

SWAP = ("node type 'Twin' was saved with the plugin revstudio-zeta 1.0, but here revstudio-alpha 1.0 provides "
        "it (both declare that type id); check that it is the layer you meant, or uninstall one of them")


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    sites = [add_distribution(tmp_path / name, f"revstudio-{name}", "1.0", {name: f"{name}_twin:SPECS"},
                              {f"{name}_twin.py": TWIN}) for name in ("alpha", "zeta")]
    body = {"nodes": [{"id": "gi", "type": "GroupInput"}, {"id": "t", "type": "Twin"},
                      {"id": "go", "type": "GroupOutput"}],
            "edges": [["gi.out", "t.in"], ["t.out", "go.in"]]}
    outer = {"nodes": [{"id": "gi", "type": "GroupInput"}, {"id": "inner", "type": "Group", "params": {"group": "body"}},
                       {"id": "go", "type": "GroupOutput"}],
             "edges": [["gi.out", "inner.in"], ["inner.out", "go.in"]]}
    project = tmp_path / "twin_bodies.revs"
    project.write_text(json.dumps({
        "format": "revstudio", "version": 1, "name": "twin-bodies",
        "nodes": [{"id": "x", "type": "Input", "params": {"shape": [4]}},
                  {"id": "g", "type": "Group", "params": {"group": "body"}},
                  {"id": "r", "type": "Repeat", "params": {"group": "body", "times": 2}},
                  {"id": "c", "type": "AdditiveCoupling", "params": {"f": "outer"}},
                  {"id": "plain", "type": "Activation"},
                  {"id": "y", "type": "Output"}],
        "edges": [["x.out", "g.in"], ["g.out", "r.in"], ["r.out", "c.in"], ["c.out", "plain.in"],
                  ["plain.out", "y.in"]],
        "groups": {"body": body, "outer": outer},
        "plugins": {"Twin": {"distribution": "revstudio-zeta", "version": "1.0"}}}))
    return project, env_with(*sites)


def test_check_warns_once_naming_each_node_that_runs_a_body_with_a_swapped_plugin_type(tmp_path: Path) -> None:
    project, env = _project(tmp_path)
    result = revstudio(env, "check", str(project), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    warned = [(d["node"], d["message"]) for d in json.loads(result.stdout)["diagnostics"]
              if d["severity"] == "warning" and "both declare that type id" in d["message"]]
    runs = "(runs node 't' in group 'body')"
    assert warned == [("g", f"{SWAP}; 3 nodes use it: 'g' {runs}, 'r' {runs}, 'c' {runs}")], warned
    nodes = [d["nodes"] for d in json.loads(result.stdout)["diagnostics"] if "both declare" in d["message"]]
    assert nodes == [["g", "r", "c"]], nodes  # every node it concerns, for the canvas and scripts
    text = revstudio(env, "check", str(project)).stdout
    assert text.count("both declare that type id") == 1, text


def test_nodes_of_a_swapped_type_in_the_project_share_one_warning(tmp_path: Path) -> None:
    """Eight Twins in a row, and a body that runs one: one warning, naming six and the count."""
    project, env = _project(tmp_path)
    data = json.loads(project.read_text())
    chain = [f"t{i}" for i in range(8)]
    data["nodes"] += [{"id": nid, "type": "Twin"} for nid in chain]
    data["edges"] = [edge for edge in data["edges"] if edge != ["plain.out", "y.in"]]
    data["edges"] += [[a + ".out", b + ".in"] for a, b in zip(["plain", *chain], [*chain, "y"])]
    project.write_text(json.dumps(data))
    result = revstudio(env, "check", str(project), "--json")
    warned = [(d["node"], d["message"]) for d in json.loads(result.stdout)["diagnostics"]
              if d["severity"] == "warning" and "both declare that type id" in d["message"]]
    assert warned == [("t0", f"{SWAP}; 11 nodes use it: 't0', 't1', 't2', 't3', 't4', 't5', and 5 more")], warned
    nodes = [d["nodes"] for d in json.loads(result.stdout)["diagnostics"] if "both declare" in d["message"]]
    assert nodes == [[*chain, "g", "r", "c"]], nodes  # the ones the text leaves out too


def test_a_node_that_runs_two_nodes_of_the_type_is_counted_once(tmp_path: Path) -> None:
    """A body with two Twins, run by g, r and c, said '6 nodes use it: 'g' ..., 'g' ...'."""
    project, env = _project(tmp_path)
    data = json.loads(project.read_text())
    data["groups"]["body"]["nodes"].insert(2, {"id": "t2", "type": "Twin"})
    data["groups"]["body"]["edges"] = [["gi.out", "t.in"], ["t.out", "t2.in"], ["t2.out", "go.in"]]
    project.write_text(json.dumps(data))
    result = revstudio(env, "check", str(project), "--json")
    warned = [(d["node"], d["message"], d["nodes"]) for d in json.loads(result.stdout)["diagnostics"]
              if d["severity"] == "warning" and "both declare that type id" in d["message"]]
    runs = "(runs node 't' in group 'body', node 't2' in group 'body')"
    assert warned == [("g", f"{SWAP}; 3 nodes use it: 'g' {runs}, 'r' {runs}, 'c' {runs}", ["g", "r", "c"])], warned


PROBLEMS_TAB = """
import sys
from PySide6.QtWidgets import QApplication
app = QApplication([])
from revstudio.qt.main_window import MainWindow
w = MainWindow()
assert w.files.load_path(sys.argv[1])
app.processEvents()
tree = w.diagnostics.tree
rows = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
swapped = [row for row in rows if "both declare that type id" in row.text(2)]
print([row.text(1) for row in swapped])
items = w.tabs.main_view().scene().node_items
print(sorted(n for n, item in items.items() if any("both declare" in m for m in item.warnings)))
noted = []
for node in ("g", "r", "c", "plain"):
    w.select_node(node)
    if "both declare that type id" in w.inspector.facts.text():
        noted.append(node)
print(noted)
w.diagnostics._on_clicked(swapped[-1])
print(sorted(w.tabs.main_view().selected_node_ids()), w.inspector.selection)
body = w.document.report.groups["body"]
print([d.node for d in body.diagnostics if "both declare that type id" in d.message])
w.close()
"""


def test_the_problems_tab_lists_it_once_and_marks_and_selects_every_node_that_runs_the_body(tmp_path: Path) -> None:
    project, env = _project(tmp_path)
    script = tmp_path / "problems.py"
    script.write_text(PROBLEMS_TAB)
    run = subprocess.run([sys.executable, "-P", str(script), str(project)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert lines[-5] == "['g, r and c']", lines  # one row for the type, where: the three nodes
    # each node that runs the body keeps its warning outline and its inspector note (only 'g' had them)
    assert lines[-4] == "['c', 'g', 'r']", lines
    assert lines[-3] == "['g', 'r', 'c']", lines
    assert lines[-2] == "['c', 'g', 'r'] ['g', 'r', 'c']", lines  # a click on the row selects all three
    assert lines[-1] == "['t']", lines  # the group's own tab marks the node inside it
