"""The main window end to end (offscreen): palette drops, inspector edits, diagnostics, groups, undo."""
from __future__ import annotations

import random

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from revstudio.core.commands import Move
from revstudio.core.graph import Graph
from revstudio.core.project import dumps
from revstudio.qt.palette import NODE_MIME


def drop_from_palette(window, type_id: str, at: QPoint) -> None:
    """What a drag from the palette delivers to the canvas: enter, move, drop of the MIME payload."""
    data = window.node_palette.tree.mimeData([window.node_palette.item_for(type_id)])
    viewport = window.current_view().viewport()
    action = Qt.DropAction.CopyAction
    buttons, mods = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    for event in (QDragEnterEvent(at, action, data, buttons, mods),
                  QDragMoveEvent(at, action, data, buttons, mods),
                  QDropEvent(QPointF(at), action, data, buttons, mods)):
        QApplication.sendEvent(viewport, event)


def test_drag_from_palette_adds_a_node_and_undo_removes_it(make_window, settle):
    window = make_window()
    assert bytes(window.node_palette.tree.mimeData([window.node_palette.item_for("Conv")]).data(NODE_MIME).data()) == b"Conv"
    drop_from_palette(window, "Conv", QPoint(300, 200))
    settle()
    graph = window.document.graph
    assert [n.type for n in graph] == ["Conv"]
    node = next(iter(graph))
    expected = window.current_view().mapToScene(QPoint(300, 200))
    assert abs(node.pos[0] - expected.x()) < 1 and abs(node.pos[1] - expected.y()) < 1
    assert window.isWindowModified()
    window.actions_by_name["undo"].trigger()
    settle()
    assert len(graph) == 0
    assert not window.isWindowModified()
    window.actions_by_name["redo"].trigger()
    assert [n.type for n in graph] == ["Conv"]


def test_double_click_in_palette_adds_at_view_centre_of_an_empty_canvas(make_window, settle):
    window = make_window()
    window.node_palette.tree.itemDoubleClicked.emit(window.node_palette.item_for("Input"), 0)
    settle()
    (node,) = list(window.document.graph)
    view = window.current_view()
    centre = view.mapToScene(view.viewport().rect().center())
    assert abs(node.pos[0] + 82 - centre.x()) < 2 and abs(node.pos[1] + 45 - centre.y()) < 2
    assert window.inspector.node_id == node.id  # the new node is selected and inspected


def test_editing_a_param_in_the_inspector_updates_shapes(make_window, revnet, settle):
    window = make_window(revnet)
    window.current_view().select_nodes(["x"])
    settle()
    assert window.inspector.node_id == "x"
    window.inspector.editors["shape"].set_text("8, 32, 32")
    settle()
    report = window.document.report
    assert report.shape("f.out") == (4, 32, 32) and report.shape("c.out") == (8, 32, 32)
    assert "parameters" in window.status_params.text()


def test_diagnostics_select_their_node(make_window, qtbot, settle):
    g = Graph("broken")
    g.add_node("Input", "x", {"shape": [3, 8, 8]}, (0, 0))
    g.add_node("Linear", "lin", {"out_features": 4}, (200, 0))  # input not connected: an error
    window = make_window(g)
    settle()
    panel = window.diagnostics
    rows = [panel.tree.topLevelItem(i) for i in range(panel.row_count())]
    row = next(r for r in rows if r.text(1).startswith("lin"))
    assert "error" in window.status_errors.text() and window.status_errors.text()[2] != "0"
    window.tabs.main_view().select_nodes([])
    view = window.tabs.main_view()
    view.centerOn(5000, 5000)  # the node is off screen
    rect = panel.tree.visualItemRect(row)
    qtbot.mouseClick(panel.tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert view.selected_node_ids() == ["lin"]
    item_rect = view.mapFromScene(view.scene().node_items["lin"].sceneBoundingRect()).boundingRect()
    assert view.viewport().rect().intersects(item_rect)  # revealed
    assert window.inspector.node_id == "lin"


def test_group_and_ungroup_round_trip(make_window, revnet, settle, qtbot):
    window = make_window(revnet)
    before = dumps(window.document.graph)
    view = window.tabs.main_view()
    view.select_nodes(["f", "m"])
    window.activateWindow()
    view.setFocus()
    qtbot.waitUntil(view.hasFocus)
    qtbot.keyClick(view, Qt.Key.Key_G, Qt.KeyboardModifier.ControlModifier)  # the Ctrl+G shortcut
    settle()
    graph = window.document.graph
    assert "f" not in graph.nodes and len(graph.groups) == 1
    (group_id,) = view.selected_node_ids()
    assert graph.node(group_id).type == "Group"
    assert window.document.report.shape("c.out") == (8, 16, 16)  # same shapes through the group
    # The inspector's button (like Tab) opens the body on its own canvas tab.
    assert window.inspector.open_group.isVisibleTo(window.inspector)
    window.inspector.open_group.click()
    assert window.tabs.count() == 2 and window.tabs.current_graph() is next(iter(graph.groups.values()))
    assert window.inspector.type_label.text() == "Group body" and group_id in window.inspector.facts.text()
    window.tabs.setCurrentIndex(0)
    view.select_nodes([group_id])
    window.actions_by_name["ungroup"].trigger()
    settle()
    assert {"f", "m"} <= set(graph.nodes) and not graph.groups
    assert window.tabs.count() == 1  # the body's tab closed with the body
    window.document.undo_stack.undo()
    window.document.undo_stack.undo()
    settle()
    assert dumps(window.document.graph) == before


def test_grouping_and_ungrouping_inside_a_group_tab(make_window, revnet, settle):
    window = make_window(revnet)
    graph = window.document.graph
    before = dumps(graph)
    window.tabs.main_view().select_nodes(["s", "f", "m"])
    assert window.tabs.group_selection()
    settle()
    (outer,) = graph.groups
    assert window.tabs.open_group(outer)
    body_view = window.tabs.current_view()
    body_view.select_nodes(["f"])
    window.actions_by_name["group"].trigger()  # Ctrl+G on the body's canvas
    settle()
    assert len(graph.groups) == 2 and "f" not in graph.groups[outer].nodes
    (nested_id,) = body_view.selected_node_ids()
    assert graph.groups[outer].nodes[nested_id].type == "Group"
    assert window.document.report.shape("c.out") == (8, 16, 16)
    assert not [d for d in window.document.report.diagnostics if d.severity == "error"]
    window.actions_by_name["ungroup"].trigger()  # and back, still inside the body
    settle()
    assert len(graph.groups) == 1 and "f" in graph.groups[outer].nodes
    for _ in range(3):
        window.document.undo_stack.undo()
    settle()
    assert dumps(graph) == before


@pytest.mark.slow
@pytest.mark.parametrize("seed", [7, 23])
def test_undo_redo_of_a_random_sequence_of_gui_edits(make_window, revnet, settle, seed):
    window = make_window(revnet)
    doc, view = window.document, window.tabs.main_view()
    rng = random.Random(seed)
    states = [dumps(doc.graph)]
    types = ["Activation", "Dropout", "Conv", "Permute", "Norm"]
    for _step in range(24):
        ids = list(doc.graph.nodes)
        choice = rng.choice(["add", "param", "move", "delete", "duplicate", "group", "connect"])
        if choice == "add":
            drop_from_palette(window, rng.choice(types), QPoint(rng.randint(50, 500), rng.randint(50, 300)))
        elif choice == "param" and ids:
            node_id = rng.choice(ids)
            view.select_nodes([node_id])
            editors = [e for e in window.inspector.editors.values() if hasattr(e, "set_text")]
            if not editors:
                continue
            editor = rng.choice(editors)
            editor.set_text(rng.choice(["2", "3", "1, 2", "same", ""]))
            editor.finished.emit()
        elif choice == "move" and ids:
            doc.push(Move(doc.graph, {rng.choice(ids): (rng.uniform(-300, 900), rng.uniform(-200, 400))}))
        elif choice == "delete" and ids:
            view.select_nodes(rng.sample(ids, min(2, len(ids))))
            window.actions_by_name["delete"].trigger()
        elif choice == "duplicate" and ids:
            view.select_nodes([rng.choice(ids)])
            view.duplicate()
        elif choice == "group" and len(ids) >= 2:
            view.select_nodes(rng.sample(ids, 2))
            window.tabs.group_selection()
        elif choice == "connect" and len(ids) >= 2:
            a, b = rng.sample(ids, 2)
            outs, ins = doc.graph.ports(a)[1], doc.graph.ports(b)[0]
            if outs and ins:
                from revstudio.core.commands import connect_replacing
                from revstudio.core.graph import PortRef

                src, dst = PortRef(a, outs[0]), PortRef(b, ins[0])
                if doc.graph.check_connect(src, dst) is None:
                    doc.push(connect_replacing(doc.graph, src, dst))
        settle()
        text = dumps(doc.graph)
        if text != states[-1]:
            states.append(text)
    assert len(states) > 8, "the random walk should have made real edits"
    stack = doc.undo_stack
    assert stack.count() == len(states) - 1  # every visible change was exactly one undo step
    for expected in reversed(states[:-1]):
        stack.undo()
        assert dumps(doc.graph) == expected
    for expected in states[1:]:
        stack.redo()
        assert dumps(doc.graph) == expected


def test_bottom_dock_tabs_and_slot_for_more(make_window):
    from PySide6.QtWidgets import QLabel

    window = make_window()
    titles = [window.bottom.tabText(i) for i in range(window.bottom.count())]
    assert titles[0].startswith("Problems") and {"Plots", "Runs", "Log"} <= set(titles)
    # Plots and Runs are the training UI's (tests/qt/gui_training); an empty Plots tab says how to start
    assert window.bottom.plots is window.training.plots_tab and window.bottom.runs is window.training.runs_panel
    assert "press Train" in window.training.plots.shown_label.text()
    window.add_bottom_tab(QLabel("extra"), "Extra")
    titles = [window.bottom.tabText(i) for i in range(window.bottom.count())]
    assert titles[-1] == "Log" and "Extra" in titles


def test_status_bar_shows_parameters_diagnostics_and_memory(make_window, revnet, settle):
    window = make_window(revnet)
    settle()
    assert window.status_params.text().startswith(f"{window.document.report.parameters:,}")
    assert window.status_errors.text().endswith("0 errors")
    if window.document.report.estimate is not None:
        text = window.status_memory.text()
        assert "rev" in text and "std" in text and "ckpt" in text


def test_theme_switch_persists(make_window):
    from revstudio.qt import theme
    from revstudio.qt.settings import Settings

    window = make_window()
    start = theme.current()
    window.actions_by_name["dark_theme"].trigger()
    assert theme.current() != start and Settings().theme == theme.current()
    window.actions_by_name["dark_theme"].trigger()
    assert theme.current() == start


def test_unexpected_exception_is_logged_autosaved_and_short(make_window, revnet):
    from revstudio.qt.app import make_excepthook

    window = make_window(revnet)
    window.document.mark_dirty()
    hook = make_excepthook(lambda: window, show_dialog=False)
    try:
        raise RuntimeError("boom in a slot")
    except RuntimeError as exc:
        hook(RuntimeError, exc, exc.__traceback__)
    assert "boom in a slot" in window.bottom.log.toPlainText()
    assert window.autosaver.recovery_file.exists()


def test_startup_does_not_import_torch(tmp_path):
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from PySide6.QtCore import QStandardPaths; QStandardPaths.setTestModeEnabled(True)\n"
        "from revstudio.qt.app import create_app\n"
        "app = create_app(['revstudio'])\n"
        "from revstudio.qt.main_window import MainWindow\n"
        "w = MainWindow(); w.show(); app.processEvents()\n"
        "print('torch' in sys.modules)\n"
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.slow
def test_startup_benchmark_runs(tmp_path):
    """The start-up benchmark in quick mode, so it cannot rot (timings are not asserted here)."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    out = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "bench_startup.py"), "--quick"],
                         capture_output=True, text=True, timeout=240, cwd=root,
                         env={**os.environ, "HOME": str(tmp_path)})
    assert "torch imported: no" in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("window painted") == 2


def test_dropping_a_project_file_on_the_window_opens_it(make_window, revnet, tmp_path, settle):
    from PySide6.QtCore import QMimeData, QUrl

    from revstudio.core.project import save

    path = tmp_path / "dropped.revs"
    save(revnet, str(path))
    window = make_window()
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(path))])
    at = QPoint(20, 20)
    enter = QDragEnterEvent(at, Qt.DropAction.CopyAction, data, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted()
    QApplication.sendEvent(window, QDropEvent(QPointF(at), Qt.DropAction.CopyAction, data,
                                              Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier))
    settle()
    assert window.document.path == str(path) and "f" in window.document.graph.nodes


def test_canvas_context_menu_offers_grouping(make_window, revnet):
    window = make_window(revnet)
    view = window.tabs.main_view()
    view.select_nodes(["f", "m"])
    menu, _ = view.build_context_menu(view.scene().node_items["f"].scenePos())
    group = next(a for a in menu.actions() if a.text() == "Group Selection")
    assert group.isEnabled()
    group.trigger()
    (group_id,) = view.selected_node_ids()
    menu, _ = view.build_context_menu(view.scene().node_items[group_id].scenePos() + QPointF(20, 20))
    assert "Ungroup" in [a.text() for a in menu.actions()]


def test_shortcuts_help_lists_the_actions(make_window, dialogs):
    window = make_window()
    window.actions_by_name["shortcuts"].trigger()
    assert dialogs.asked == ["info:Keyboard shortcuts"]
    assert window.actions_by_name["group"].shortcut().toString() == "Ctrl+G"
    assert window.actions_by_name["save"].shortcut().toString() == "Ctrl+S"
    assert window.actions_by_name["undo"].shortcut().toString() == "Ctrl+Z"


def test_autosave_failure_is_logged_once(make_window, revnet, tmp_path):
    window = make_window(revnet)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    window.autosaver.store.folder = blocker / "recovery"  # cannot be created: a file is in the way
    window.document.mark_dirty()
    assert not window.autosaver.save_now() and not window.autosaver.save_now()
    log = window.bottom.log.toPlainText()
    assert log.lower().count("autosave to") == 1 and "Save As" in log


def test_preferences_apply_at_once_and_persist(make_window, revnet, tmp_path, qtbot):
    from revstudio.core.project import save
    from revstudio.qt import theme
    from revstudio.qt.settings import Settings

    window = make_window(revnet)
    start_theme = theme.current()
    dialog = window.show_preferences()
    dialog.autosave.setValue(12)
    dialog.theme.setCurrentIndex(dialog.theme.findData("light" if start_theme == "dark" else "dark"))
    dialog.reopen.setChecked(True)
    dialog.accept()
    assert window.autosaver.timer.interval() == 12_000
    assert theme.current() != start_theme
    stored = Settings()
    assert stored.autosave_seconds == 12 and stored.reopen_last and stored.theme == theme.current()
    window.set_theme(start_theme)

    path = tmp_path / "last.revs"
    save(revnet, str(path))
    Settings().add_recent(str(path))
    again = make_window()  # a new session: autosave interval and the last project come back
    assert again.autosaver.timer.interval() == 12_000
    with_last = []
    again.opened.connect(lambda: with_last.append(again.document.path))
    again.open_later(None)
    qtbot.waitUntil(lambda: bool(with_last), timeout=30_000)  # a hang guard: returns when it holds
    assert with_last == [str(path)]


def test_shortcuts_help_names_undo_and_redo_not_the_next_edit(make_window, dialogs, revnet):
    """The undo action's text follows the stack ("Undo Delete f"); the key list names the action."""
    window = make_window(revnet)
    window.current_view().select_nodes(["f"])
    window.current_view().delete_selection()
    shown: list[str] = []
    dialogs.info = lambda parent, title, text: shown.append(text)
    window.actions_by_name["shortcuts"].trigger()
    assert ">Undo<" in shown[0] and ">Redo<" in shown[0]
    assert "Undo Delete" not in shown[0] and "Undo Remove" not in shown[0]
