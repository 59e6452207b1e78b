"""A plugin type saved from one package and provided here by another, inside group bodies.

The warning that names both packages was made while a body was checked, so it
reached only the body's own tab: ``check`` and the editor's Problems tab said
nothing for a Twin inside a Group, a Repeat or a coupling's F (nested too).
Now each project node that runs such a body carries it, naming the inner node.
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


def test_check_warns_on_each_node_that_runs_a_body_with_a_swapped_plugin_type(tmp_path: Path) -> None:
    project, env = _project(tmp_path)
    result = revstudio(env, "check", str(project), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    warned = [(d["node"], d["message"]) for d in json.loads(result.stdout)["diagnostics"]
              if d["severity"] == "warning" and "both declare that type id" in d["message"]]
    assert warned == [("g", f"node 't' in group 'body': {SWAP}"), ("r", f"node 't' in group 'body': {SWAP}"),
                      ("c", f"node 't' in group 'body': {SWAP}")], warned


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
w.diagnostics._on_clicked(swapped[-1])
print(w.tabs.main_view().selected_node_ids(), w.inspector.selection)
body = w.document.report.groups["body"]
print([d.node for d in body.diagnostics if "both declare that type id" in d.message])
w.close()
"""


def test_the_problems_tab_lists_it_and_a_click_selects_the_node_that_runs_the_body(tmp_path: Path) -> None:
    project, env = _project(tmp_path)
    script = tmp_path / "problems.py"
    script.write_text(PROBLEMS_TAB)
    run = subprocess.run([sys.executable, "-P", str(script), str(project)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert lines[-3] == "['g', 'r', 'c']", lines
    assert lines[-2] == "['c'] ['c']", lines  # a click on the coupling's row selects the coupling
    assert lines[-1] == "['t']", lines  # the group's own tab marks the node inside it
