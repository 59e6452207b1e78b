"""A project whose plugin is not installed: missing nodes keep their ports and params, and save back."""
from __future__ import annotations

import json
from pathlib import Path

from revstudio.core.project import load

PROJECT = Path(__file__).resolve().parents[2] / "examples" / "plugin" / "haar_flow.revs"


def test_missing_plugin_nodes_are_shown_kept_and_saved_back(make_window, tmp_path, settle):
    window = make_window()
    assert window.files.load_path(str(PROJECT))  # revstudio-haar is not installed in this environment
    settle()
    scene = window.tabs.main_view().scene()
    haar = scene.node_items["haar"].display
    assert not haar.known_type and haar.category == "missing"
    assert haar.lines == ("missing plugin:", "revstudio-haar")
    assert (haar.inputs, haar.outputs) == (("in",), ("out",))  # its wires stay attached
    flagged = {d.node: d.message for d in window.document.report.diagnostics if d.severity == "error"}
    where = f"pip install {PROJECT.parent.resolve()})"  # (on no package index: its folder in this checkout)
    assert where in flagged["haar"] and where in flagged["leaky"]

    window.select_node("leaky")
    assert "comes from the plugin revstudio-haar" in window.inspector.help.text()
    labels = [w.text() for w in window.inspector.findChildren(type(window.inspector.help))]
    assert any(text == "0.5 (kept)" for text in labels), labels

    target = tmp_path / "again.revs"
    assert window.files.write(str(target))
    saved, original = json.loads(target.read_text()), json.loads(PROJECT.read_text())
    saved.pop("view"), original.pop("view")  # the canvas stores where it was looking
    assert saved == original
    assert load(target).nodes["leaky"].params == {"slope": 0.5}


def test_copying_missing_plugin_nodes_into_another_project_keeps_what_to_install(make_window, tmp_path, settle):
    """The pasted nodes lost their record: the new file said only 'unknown node type' and no
    longer which package to install."""
    source = make_window()
    assert source.files.load_path(str(PROJECT))  # revstudio-haar is not installed here
    settle()
    view = source.tabs.main_view()
    view.select_nodes(["haar", "leaky"])
    assert view.copy()

    target = make_window()
    target.tabs.main_view().paste()
    settle()
    pasted = {node.type for node in target.document.graph.nodes.values()}
    assert pasted == {"HaarDownsample", "InvertibleLeakyReLU"}
    flagged = [d.message for d in target.document.report.diagnostics if d.severity == "error"]
    assert flagged and all(f"pip install {PROJECT.parent.resolve()})" in message for message in flagged), flagged
    path = tmp_path / "pasted.revs"
    assert target.files.write(str(path))
    record = {"distribution": "revstudio-haar", "version": "0.1.0"}
    assert json.loads(path.read_text())["plugins"] == {"HaarDownsample": record, "InvertibleLeakyReLU": record}


def test_plugin_problems_reported_before_the_window_existed_are_in_its_log(make_window, monkeypatch):
    """Plugins load with the first document, before the window's Log tab is attached: a skipped
    type reached only the terminal, while the status bar said "see the Log tab"."""
    from revstudio.core import plugins

    early = plugins.PluginProblem("revstudio-probe (entry point 'probe')",
                                  "node type 'DottedPort' skipped: its inputs include 'in.a'")
    monkeypatch.setattr(plugins, "_problems", [early])  # as loading before the window left it
    window = make_window()
    log = window.bottom.log.toPlainText()
    assert log.count(f"warning plugin {early.plugin}: {early.message}") == 1, log
    plugins.report("revstudio-probe (entry point 'probe')", "a later problem")  # and later ones, once
    assert window.bottom.log.toPlainText().count("a later problem") == 1
