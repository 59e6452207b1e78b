"""Open Snapshot: a run's project opens in a read-only canvas tab that nothing can save over.

The run folders here are made by hand (a snapshot and a status, as the worker
writes them): opening needs no run to have happened.
"""
from __future__ import annotations

import json
import shutil

import pytest
from PySide6.QtCore import Qt

from revstudio.core.commands import SetParam
from revstudio.qt.runs.snapshot import SnapshotDocument

from .conftest import EXAMPLE


@pytest.fixture
def project_with_run(train_window, tmp_path):
    window = train_window({"steps": 10})
    run_dir = tmp_path / "project" / "runs" / "coupling-20261202-013000"
    run_dir.mkdir(parents=True)
    shutil.copy(EXAMPLE, run_dir / "project.revs")
    (run_dir / "status.json").write_text(json.dumps({"status": "finished", "step": 10, "total_steps": 10}))
    window.training.runs_panel.reload()
    return window, run_dir


def test_open_snapshot_is_a_read_only_tab_named_after_the_run(qtbot, project_with_run, dialogs):
    window, run_dir = project_with_run
    tabs, panel = window.tabs, window.training.runs_panel
    before = tabs.count()
    panel.select_paths([run_dir])
    assert panel.buttons["open"].isEnabled()
    panel.buttons["open"].click()  # as a click does
    assert tabs.count() == before + 1 and not dialogs.errors
    view = tabs.currentWidget()
    title = tabs.tabText(tabs.currentIndex())
    assert title == f"{view.graph.name} @ run {run_dir.name} (read-only)"
    assert "Read-only" in tabs.tabToolTip(tabs.currentIndex())
    assert isinstance(view.document, SnapshotDocument) and view.document is not window.document
    assert view.document.path is None  # nothing in the window can save it
    assert set(view.graph.nodes) == set(window.document.graph.nodes)
    assert view.document.report is not None  # shapes and regions drawn as for the project
    # a second Open shows the same tab
    assert window.training.run_action("open", [run_dir]) is view and tabs.count() == before + 1
    # the inspector stays on the project: it never edits the snapshot
    assert window.inspector.graph is window.document.graph


def test_edits_on_the_snapshot_tab_are_refused_and_save_writes_only_the_project(qtbot, project_with_run):
    window, run_dir = project_with_run
    snapshot_bytes = (run_dir / "project.revs").read_bytes()
    view = window.training.run_action("open", [run_dir])
    node = next(n for n in view.graph if n.type == "Conv")
    old = view.graph.nodes[node.id].params["out_channels"]
    view.document.push(SetParam(view.graph, node.id, "out_channels", old + 1))
    assert view.graph.nodes[node.id].params["out_channels"] == old
    assert "read-only" in window.statusBar().currentMessage()
    # keyboard: select everything, Delete, Ctrl+G; nothing changes and the project's undo stack stays empty
    view.setFocus()
    view.select_nodes(list(view.graph.nodes))
    count = len(view.graph.nodes)
    qtbot.keyClick(view, Qt.Key.Key_Delete)
    assert window.tabs.group_selection() is False and "read-only" in window.statusBar().currentMessage()
    assert len(view.graph.nodes) == count
    assert window.document.undo_stack.count() == 0
    # nodes cannot be dragged off their saved places
    assert all(not (item.flags() & item.GraphicsItemFlag.ItemIsMovable)
               for item in view.scene().node_items.values())
    # Save (Ctrl+S) with the snapshot tab current writes the project, never the snapshot
    window.document.push(SetParam(window.document.graph, node.id, "out_channels", old + 2))
    assert window.files.save()
    assert (run_dir / "project.revs").read_bytes() == snapshot_bytes
    saved = json.loads((run_dir.parents[1] / "coupling.revs").read_text())
    assert next(n for n in saved["nodes"] if n["id"] == node.id)["params"]["out_channels"] == old + 2


def test_closing_and_deleting_the_run_close_the_tab(qtbot, project_with_run, dialogs):
    window, run_dir = project_with_run
    tabs = window.tabs
    base = tabs.count()
    view = window.training.run_action("open", [run_dir])
    tabs.tabCloseRequested.emit(tabs.indexOf(view))
    assert tabs.count() == base
    window.training.run_action("open", [run_dir])
    dialogs.confirms = [True]
    assert window.training.run_action("delete", [run_dir]) is True
    assert tabs.count() == base and not run_dir.exists()


def test_an_unreadable_snapshot_gets_the_open_message(qtbot, project_with_run, dialogs):
    window, run_dir = project_with_run
    (run_dir / "project.revs").write_text("{ not json")
    base = window.tabs.count()
    assert window.training.run_action("open", [run_dir]) is None
    title, text = dialogs.errors[-1]
    assert title == "Cannot open the snapshot" and str(run_dir / "project.revs") in text
    assert window.tabs.count() == base


def test_a_refused_edit_on_the_snapshot_tab_is_not_reported_as_done(qtbot, project_with_run):
    """Delete on the snapshot tab said 'Deleted 6 nodes' (after the refusal) while nothing went."""
    window, run_dir = project_with_run
    view = window.training.run_action("open", [run_dir])
    said: list[str] = []
    window.statusBar().messageChanged.connect(lambda text: said.append(text) if text else None)
    view.setFocus()
    view.select_nodes(list(view.graph.nodes))
    count = len(view.graph.nodes)
    for key, mods in ((Qt.Key.Key_Delete, Qt.KeyboardModifier.NoModifier),
                      (Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier),
                      (Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)):
        said.clear()
        qtbot.keyClick(view, key, mods)
        assert len(view.graph.nodes) == count
        assert said and said[-1].startswith("Not edited"), said
    qtbot.wait(20)  # the next key press comes in a later turn of the event loop
    view.select_nodes(list(view.graph.nodes))
    qtbot.keyClick(view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)  # copying is no edit: it says so
    assert said[-1].startswith("Copied"), said
