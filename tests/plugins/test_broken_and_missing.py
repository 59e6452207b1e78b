"""Plugins that fail, and projects whose plugin is not installed.

A broken plugin (its import fails, it declares a type id that is taken, its
``infer`` raises) is named once on stderr and skipped; the CLI still works and
the rest of the graph is still checked. A project that uses a type nobody
provides opens with those nodes kept (params and wires), saves back unchanged,
and ``check`` names the package to install when the file records it.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from plugin_site import EXAMPLE_PLUGIN, ROOT, add_distribution, env_with, haar_env, python, revstudio

EXAMPLE = ROOT / "resources" / "examples" / "two_branch.revs"

BAD_INFER = textwrap.dedent('''
    from revstudio.core.spec import NodeSpec
    from revstudio.nodes import CATALOG

    def _boom(ctx):
        raise ZeroDivisionError("division by zero in the plugin")

    CONV_AGAIN = [s for s in CATALOG if s.type_id == "Conv"][0]
    SPECS = [
        NodeSpec(type_id="Boom", category="Plugins", help="Always fails to infer shapes, for the tests.",
                 params={}, inputs=("in",), outputs=("out",), infer=_boom),
        CONV_AGAIN,   # a type id the built-in catalog already declares
        "not a spec",
    ]
''')


@pytest.fixture(scope="module")
def broken_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    site = tmp_path_factory.mktemp("broken")
    add_distribution(site, "revstudio-missing-module", "1.0", {"gone": "no_such_module_here:SPECS"})
    add_distribution(site, "revstudio-crashes", "2.0", {"crash": "crash_plugin:SPECS"},
                     {"crash_plugin.py": "raise RuntimeError('the plugin crashed while importing')\n"})
    add_distribution(site, "revstudio-boom", "0.3", {"boom": "boom_plugin:SPECS"}, {"boom_plugin.py": BAD_INFER})
    return env_with(site)


@pytest.fixture(scope="module")
def haar_plugin(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], dict[str, str]]:
    """``haar_plugin(version, module)``: the environment of a child that has revstudio-haar ``version``
    installed with ``module`` as its nodes module; one install per pair, shared by the tests that ask for it."""
    envs: dict[tuple[str, str], dict[str, str]] = {}

    def install(version: str, module: str) -> dict[str, str]:
        if (version, module) not in envs:
            site = add_distribution(tmp_path_factory.mktemp("haar"), "revstudio-haar", version,
                                    {"haar": "revstudio_haar_nodes:SPECS"}, {"revstudio_haar_nodes.py": module})
            envs[version, module] = env_with(site)
        return envs[version, module]
    return install


def test_a_command_still_works_and_names_each_broken_plugin_once(broken_env: dict[str, str]) -> None:
    result = revstudio(broken_env, "check", str(EXAMPLE))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("revstudio: warning: plugin")]
    text = "\n".join(lines)
    assert "revstudio-missing-module (entry point 'gone')" in text and "ModuleNotFoundError" in text
    assert "revstudio-crashes (entry point 'crash')" in text and "the plugin crashed while importing" in text
    # the line in the plugin that raised (a NodeSpec missing a field says only which argument)
    assert "(RuntimeError: the plugin crashed while importing, in crash_plugin, line 1)" in text
    assert "no_such_module_here'); its node types" in text   # no frame of the plugin's own to name
    assert "revstudio-boom (entry point 'boom'): node type 'Conv' skipped" in text
    assert "is not a NodeSpec" in text
    assert len(lines) == len(set(lines)) == 4, result.stderr
    assert "Traceback" not in result.stderr


def test_plugins_command_lists_what_was_skipped(broken_env: dict[str, str]) -> None:
    result = revstudio(broken_env, "plugins", "--json")
    assert result.returncode == 1
    info = json.loads(result.stdout)
    assert {p["plugin"].split()[0] for p in info["problems"]} == {
        "revstudio-missing-module", "revstudio-crashes", "revstudio-boom"}
    boom = [p for p in info["plugins"] if p["distribution"] == "revstudio-boom"]
    assert boom[0]["types"] == ["Boom"]  # its good spec still registered
    # a plugin none of whose types loaded is still listed (it was left out of the list), with none
    crashes = [p for p in info["plugins"] if p["distribution"] == "revstudio-crashes"]
    assert crashes == [{"entry_point": "crash", "value": "crash_plugin:SPECS", "distribution": "revstudio-crashes",
                        "version": "2.0", "builtin": False, "types": []}], info["plugins"]
    text = revstudio(broken_env, "plugins").stdout
    assert "revstudio-crashes 2.0 (entry point 'crash'): 0 node types\n  (none loaded: see below)\n" in text, text
    builtin = [p for p in info["plugins"] if p["builtin"]][0]
    assert "Conv" in builtin["types"]     # the built-in Conv kept its place


def test_plugins_command_names_each_skipped_plugin_once(broken_env: dict[str, str]) -> None:
    """It printed each on stdout ("skipped: ...") and again as the warning every command gives."""
    result = revstudio(broken_env, "plugins")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    skipped = [line for line in lines[lines.index("problems:") + 1:] if line.startswith("  plugin ")]
    assert len(skipped) == 4 and any("revstudio-crashes" in line for line in skipped)
    assert "revstudio-crashes" not in result.stderr and "Traceback" not in result.stderr


def test_an_infer_that_raises_fails_only_its_node_naming_the_plugin(broken_env: dict[str, str],
                                                                    tmp_path: Path) -> None:
    project = tmp_path / "boom.revs"
    project.write_text(json.dumps({
        "format": "revstudio", "version": 1, "name": "boom",
        "nodes": [{"id": "x", "type": "Input", "params": {"shape": [4]}},
                  {"id": "b", "type": "Boom"}, {"id": "b2", "type": "Boom"},
                  {"id": "y", "type": "Output"}, {"id": "z", "type": "Output"}],
        "edges": [["x.out", "b.in"], ["x.out", "b2.in"], ["b.out", "y.in"], ["b2.out", "z.in"]]}))
    result = revstudio(broken_env, "check", str(project), "--json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    messages = {d["node"]: d["message"] for d in report["diagnostics"] if d["severity"] == "error"}
    assert "the plugin revstudio-boom (entry point 'boom') failed to infer shapes" in messages["b"]
    assert "ZeroDivisionError" in messages["b2"]
    # the line of the plugin that raised, as a build that raises or an import that fails says it
    assert "(ZeroDivisionError: division by zero in the plugin, in boom_plugin, line 6)" in messages["b"], messages
    assert report["nodes"]["x"]["outputs"] == {"out": [4]}
    # reported once on stderr, though two nodes hit it
    assert result.stderr.count("node type 'Boom': infer raised ZeroDivisionError") == 1, result.stderr


def test_the_editor_starts_with_broken_plugins(broken_env: dict[str, str]) -> None:
    code = ("from PySide6.QtWidgets import QApplication; app = QApplication([]); "
            "from revstudio.qt.main_window import MainWindow; w = MainWindow(); "
            "ids = w.node_palette.visible_type_ids(); assert 'Boom' in ids and 'Conv' in ids; print('ok')")
    result = python(broken_env, code)
    assert result.stdout.strip() == "ok", result.stderr


# ---- a project whose plugin is not installed ----------------------------------

def test_missing_plugin_types_are_named_with_the_package_to_install(tmp_path: Path) -> None:
    env = env_with()  # the example plugin is not on the path
    result = revstudio(env, "check", str(EXAMPLE_PLUGIN / "haar_flow.revs"), "--json")
    assert result.returncode == 1
    errors = {d["node"]: d["message"] for d in json.loads(result.stdout)["diagnostics"] if d["severity"] == "error"}
    assert "node type 'HaarDownsample' comes from the plugin revstudio-haar, which is not installed" in errors["haar"]
    # revstudio-haar is on no package index: 'pip install revstudio-haar' found nothing; the example's folder
    assert f"pip install {EXAMPLE_PLUGIN.resolve()}" in errors["leaky"] and "pip install revstudio-haar" not in errors["leaky"]
    text = revstudio(env, "check", str(EXAMPLE_PLUGIN / "haar_flow.revs")).stdout
    assert f"pip install {EXAMPLE_PLUGIN.resolve()}), and reopen the file" in text


def test_a_missing_plugin_revstudio_does_not_ship_is_named_by_its_distribution(monkeypatch) -> None:
    from revstudio.core import plugins

    advice = plugins.install_advice("acme-flows")
    assert "the package that provides it, the distribution acme-flows" in advice
    assert "pip install acme-flows where it is published" in advice and "folder of its source" in advice
    # revstudio installed from a wheel: no examples/ beside it, so the checkout's folder is named
    monkeypatch.setitem(plugins.SHIPPED, "revstudio-haar", "examples/gone")
    advice = plugins.install_advice("revstudio-haar")
    assert "not on PyPI" in advice and "pip install ./examples/gone" in advice


def test_a_type_without_a_record_still_says_what_to_do(tmp_path: Path) -> None:
    project = tmp_path / "unknown.revs"
    project.write_text(json.dumps({"format": "revstudio", "version": 1, "nodes": [{"id": "a", "type": "Fancy"}],
                                   "edges": []}))
    result = revstudio(env_with(), "check", str(project), "--json")
    errors = [d["message"] for d in json.loads(result.stdout)["diagnostics"] if d["severity"] == "error"]
    assert any("unknown node type 'Fancy'" in m and "install the plugin" in m for m in errors)


HAAR_SKIPS_A_TYPE = textwrap.dedent('''
    from revstudio.core.spec import NodeSpec

    SPECS = [NodeSpec(type_id="HaarDownsample", category=None, help="Malformed, for the tests.",
                      params={}, inputs=("in",), outputs=("out",), infer=lambda ctx: {"out": ctx.input("in")})]
''')


@pytest.mark.parametrize(("module", "reason"), [
    ("def broken(:\n", "which is installed but could not be loaded (SyntaxError: "),
    (HAAR_SKIPS_A_TYPE, "which is installed but skipped it: its category must be text"),
])
def test_a_broken_installed_plugin_is_not_called_missing(haar_plugin: Callable[[str, str], dict[str, str]],
                                                         module: str, reason: str) -> None:
    """The file's plugin is installed but failed to import, or skipped the type: the node's error
    said 'not installed ... pip install revstudio-haar', which it was; now it says what went wrong."""
    result = revstudio(haar_plugin("0.1.0", module), "check", str(EXAMPLE_PLUGIN / "haar_flow.revs"), "--json")
    assert result.returncode == 1, result.stderr
    errors = {d["node"]: d["message"] for d in json.loads(result.stdout)["diagnostics"] if d["severity"] == "error"}
    message = errors["haar"]
    assert message.startswith("node type 'HaarDownsample' comes from the plugin revstudio-haar (the file was "
                              "saved with revstudio-haar 0.1.0), " + reason), message
    assert "not installed" not in message and message.endswith("fix or update the plugin and reopen the file")


SAVE_BACK = """
import sys
from revstudio.core.project import load, save
g = load(sys.argv[1])
assert g.nodes["leaky"].params == {"slope": 0.5}
save(g, sys.argv[2])
"""


def test_a_project_with_missing_types_saves_back_unchanged(tmp_path: Path) -> None:
    source = EXAMPLE_PLUGIN / "haar_flow.revs"
    out = tmp_path / "again.revs"
    script = tmp_path / "save_back.py"
    script.write_text(SAVE_BACK)
    run = subprocess.run([sys.executable, "-P", str(script), str(source), str(out)], env=env_with(),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert out.read_bytes() == source.read_bytes()


def test_saving_with_the_plugin_installed_records_it(tmp_path: Path) -> None:
    env = haar_env(tmp_path / "site")
    code = ("import sys; from revstudio.core.project import loads, dumps; "
            "g = loads(open(sys.argv[1]).read()); g.plugins = {}; print(dumps(g))")
    run = subprocess.run([sys.executable, "-P", "-c", code, str(EXAMPLE_PLUGIN / "haar_flow.revs")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["made_by"].startswith("revstudio ")
    assert doc["plugins"] == {"HaarDownsample": {"distribution": "revstudio-haar", "version": "0.1.0"},
                              "InvertibleLeakyReLU": {"distribution": "revstudio-haar", "version": "0.1.0"}}


TWIN = textwrap.dedent('''
    from revstudio.core.spec import NodeSpec

    SPECS = [NodeSpec(type_id="Twin", category="Plugins", help="Declared by two plugins, for the tests.",
                      params={}, inputs=("in",), outputs=("out",), infer=lambda ctx: {"out": ctx.input("in")})]
''')


@pytest.mark.parametrize("first", ["zeta", "alpha"])
def test_of_two_plugins_declaring_one_type_the_same_one_wins_whatever_the_path_order(
        tmp_path: Path, first: str) -> None:
    """Which 'earlier plugin' keeps a taken type id follows the distribution names, not the order
    sys.path happens to list the packages in (that differs between machines and venvs)."""
    sites = {}
    for name in ("alpha", "zeta"):
        sites[name] = add_distribution(tmp_path / name, f"revstudio-{name}", "1.0", {name: f"{name}_twin:SPECS"},
                                       {f"{name}_twin.py": TWIN})
    other = "alpha" if first == "zeta" else "zeta"
    result = revstudio(env_with(sites[first], sites[other]), "plugins", "--json")
    info = json.loads(result.stdout)
    owners = [p["distribution"] for p in info["plugins"] if "Twin" in p["types"]]
    assert owners == ["revstudio-alpha"], info
    assert any("revstudio-zeta" in str(p) and "already declared by revstudio-alpha" in str(p)
               for p in info["problems"]), info


def test_a_type_saved_with_one_plugin_and_provided_by_another_is_a_warning(tmp_path: Path) -> None:
    """Two plugins declare Twin; the file was saved with revstudio-zeta's, but revstudio-alpha's
    wins here. The project loaded the other layer silently (and saving re-recorded it)."""
    sites = [add_distribution(tmp_path / name, f"revstudio-{name}", "1.0", {name: f"{name}_twin:SPECS"},
                              {f"{name}_twin.py": TWIN}) for name in ("alpha", "zeta")]
    project = tmp_path / "twin.revs"
    project.write_text(json.dumps({
        "format": "revstudio", "version": 1, "name": "twin",
        "nodes": [{"id": "x", "type": "Input", "params": {"shape": [4]}}, {"id": "t", "type": "Twin"},
                  {"id": "y", "type": "Output"}],
        "edges": [["x.out", "t.in"], ["t.out", "y.in"]],
        "plugins": {"Twin": {"distribution": "revstudio-zeta", "version": "1.0"}}}))
    result = revstudio(env_with(*sites), "check", str(project), "--json")
    warnings = {d["node"]: d["message"] for d in json.loads(result.stdout)["diagnostics"] if d["severity"] == "warning"}
    assert warnings.get("t") == (
        "node type 'Twin' was saved with the plugin revstudio-zeta 1.0, but here revstudio-alpha 1.0 provides it "
        "(both declare that type id); check that it is the layer you meant, or uninstall one of them"), warnings


MISSING_IN_INSPECTOR = """
import re, sys
from PySide6.QtWidgets import QApplication, QLabel
app = QApplication([])
from revstudio.qt.main_window import MainWindow
w = MainWindow()
assert w.files.load_path(sys.argv[1])
w.inspector.set_selection(w.document.graph, ["haar"])
app.processEvents()
rows = [re.search(r"Parameters</td><td[^>]*>([^<]*)<", label.text()) for label in w.inspector.findChildren(QLabel)]
print([row.group(1) for row in rows if row])
"""


def test_the_inspector_does_not_count_zero_weights_for_a_missing_plugin_node(tmp_path: Path) -> None:
    """A node whose plugin is not installed has no known weights: the inspector said 'Parameters 0'
    (check's table says '-')."""
    script = tmp_path / "inspect.py"
    script.write_text(MISSING_IN_INSPECTOR)
    run = subprocess.run([sys.executable, "-P", str(script), str(EXAMPLE_PLUGIN / "haar_flow.revs")],
                         env=env_with(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "['–']", run.stdout


BROKEN_ON_CANVAS = """
import sys
from PySide6.QtWidgets import QApplication
app = QApplication([])
from revstudio.qt.main_window import MainWindow
w = MainWindow()
assert w.files.load_path(sys.argv[1])
print(w.tabs.current_view().scene().node_items["haar"].display.lines)
"""


def canvas_header(env: dict[str, str], tmp_path: Path) -> str:
    """The header the canvas draws on haar_flow's 'haar' node, in a child that sees ``env``'s plugins."""
    script = tmp_path / "canvas.py"
    script.write_text(BROKEN_ON_CANVAS)
    run = subprocess.run([sys.executable, "-P", str(script), str(EXAMPLE_PLUGIN / "haar_flow.revs")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip().splitlines()[-1]


def test_the_canvas_calls_an_installed_plugin_that_fails_broken_not_missing(
        haar_plugin: Callable[[str, str], dict[str, str]], tmp_path: Path) -> None:
    """The node header said 'missing plugin: revstudio-haar' though it was installed (its import failed)."""
    assert canvas_header(haar_plugin("0.1.0", "def broken(:\n"), tmp_path) == "('broken plugin:', 'revstudio-haar')"


HAAR_RENAMED = textwrap.dedent('''
    from revstudio.core.spec import NodeSpec

    def _same(ctx):
        return {"out": ctx.input("in")}

    SPECS = [NodeSpec(type_id=name, category="Plugins", help="Renamed without legacy_ids, for the tests.",
                      params={}, inputs=("in",), outputs=("out",), infer=_same)
             for name in ("HaarDown", "InvertibleLeakyReLU")]
''')


def test_an_installed_plugin_that_no_longer_declares_the_type_is_not_called_missing(
        haar_plugin: Callable[[str, str], dict[str, str]], tmp_path: Path) -> None:
    """revstudio-haar 0.2.0 loads fine but renamed HaarDownsample (no legacy_ids): check said 'not
    installed ... pip install revstudio-haar', and the canvas 'missing plugin:', though it is installed."""
    env = haar_plugin("0.2.0", HAAR_RENAMED)
    result = revstudio(env, "check", str(EXAMPLE_PLUGIN / "haar_flow.revs"), "--json")
    assert result.returncode == 1, result.stderr
    errors = {d["node"]: d["message"] for d in json.loads(result.stdout)["diagnostics"] if d["severity"] == "error"}
    message = errors["haar"]
    assert message.startswith("node type 'HaarDownsample' comes from the plugin revstudio-haar (the file was saved "
                              "with revstudio-haar 0.1.0); revstudio-haar 0.2.0 is installed but does not provide "
                              "that type (did you mean HaarDown?)"), message
    assert "legacy_ids" in message and "not installed" not in message and "pip install" not in message
    assert canvas_header(env, tmp_path) == "('not in plugin:', 'revstudio-haar')"


def test_an_installed_plugin_that_declares_no_types_at_all_says_so(
        haar_plugin: Callable[[str, str], dict[str, str]], tmp_path: Path) -> None:
    """revstudio-haar 0.2.0 with ``SPECS = []``: check said 'does not provide that type. If the plugin
    renamed it, ...', the canvas 'not in plugin:', and `revstudio plugins` listed nothing, exit 0."""
    env = haar_plugin("0.2.0", "SPECS = []\n")
    result = revstudio(env, "check", str(EXAMPLE_PLUGIN / "haar_flow.revs"), "--json")
    assert result.returncode == 1, result.stderr
    errors = {d["node"]: d["message"] for d in json.loads(result.stdout)["diagnostics"] if d["severity"] == "error"}
    assert errors["haar"] == (
        "node type 'HaarDownsample' comes from the plugin revstudio-haar (the file was saved with revstudio-haar "
        "0.1.0), which is installed but declares no node types (revstudio_haar_nodes:SPECS is an empty list); "
        "fix or update the plugin and reopen the file"), errors
    listing = revstudio(env, "plugins")
    assert listing.returncode == 1, listing.stdout
    assert ("problems:\n  plugin revstudio-haar (entry point 'haar'): declares no node types (revstudio_haar_nodes:SPECS "
            "is an empty list); put its NodeSpecs in that list, or remove the entry point") in listing.stdout
    assert canvas_header(env, tmp_path) == "('broken plugin:', 'revstudio-haar')"
