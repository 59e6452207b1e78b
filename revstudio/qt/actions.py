"""The window's actions, menus and toolbar, with the usual shortcuts.

Actions are created once here and looked up by name (``window.actions_by_name``)
so menus, toolbar, tests and the real-window driver all trigger the same code.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QToolBar

from revstudio.qt import new_window, pane_focus
from revstudio.qt.theme import icon

if TYPE_CHECKING:  # pragma: no cover
    from revstudio.qt.main_window import MainWindow

Std = QKeySequence.StandardKey
# Keys that mean something else in a text field or a dock (Tab moves focus, Delete edits
# text): these act only while the canvas has focus.
CANVAS_ONLY = {"cut", "copy", "paste", "duplicate", "delete", "delete_reconnect", "select_all", "quick_add",
               "connect", "rename", "open_group", "fit", "fit_selection",
               "previous_view", "walk_right", "walk_left", "walk_down", "walk_up"}


def _action(window: MainWindow, name: str, text: str, slot: Callable[[], object],
            shortcut: QKeySequence.StandardKey | str | None = None, icon_name: str | None = None,
            tip: str = "") -> QAction:
    act = QAction(text, window)
    act.setObjectName(name)
    if shortcut is not None:
        act.setShortcut(QKeySequence(shortcut))
        act.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut if name in CANVAS_ONLY
                               else Qt.ShortcutContext.WindowShortcut)
    if icon_name:
        act.setIcon(icon(icon_name))
        act.setProperty("icon_name", icon_name)
    if tip:
        act.setStatusTip(tip)
        act.setToolTip(f"{text.replace('&', '')} ({act.shortcut().toString()})" if shortcut else tip)
    act.triggered.connect(lambda _checked=False: slot())
    (window.tabs if name in CANVAS_ONLY else window).addAction(act)
    window.actions_by_name[name] = act
    return act


def _keep_key_in_tip(act: QAction, key: str) -> None:
    """The tooltip names the key, as the other toolbar buttons' do, and the edit the undo stack
    gives the action's text ("Undo Delete 1 node (Ctrl+Z)"). It follows the action's own
    ``changed``: the document's stack outlives the window and its actions."""
    def tip() -> None:
        if not shiboken6.isValid(act):  # the stack still speaks while the window is torn down
            return
        text = f"{act.text().replace('&', '')} ({key})"
        if act.toolTip() != text:  # setToolTip emits changed again: once
            act.setToolTip(text)

    act.changed.connect(tip)
    tip()


def build_actions(w: MainWindow) -> None:
    f, t = w.files, w.tabs
    _action(w, "new", "&New", f.new_file, Std.New, "new", "Start an empty project")
    _action(w, "open", "&Open…", f.open_file, Std.Open, "open", "Open a .revs project")
    _action(w, "new_window", "New &Window", partial(new_window.open_window, None, w.show_message), "Ctrl+Shift+N",
            None, "Open another revstudio window, for a second project at once")
    _action(w, "open_in_new_window", "Open in New Win&dow…", w.open_in_new_window, None, None,
            "Open a .revs project in another revstudio window, keeping this one")
    _action(w, "save", "&Save", f.save, Std.Save, "save", "Save the project")
    _action(w, "save_as", "Save &As…", f.save_as, Std.SaveAs, None, "Save the project under a new name")
    _action(w, "export", "&Export Python…", w.export_code, "Ctrl+E", None, "Write standalone PyTorch code")
    _action(w, "export_onnx", "Expor&t ONNX…", w.export_onnx, None, None,
            "Write the network as an ONNX file (onnxruntime, TensorRT, ...), checked against the model")
    _action(w, "preferences", "P&references…", w.show_preferences, "Ctrl+,", None,
            "Theme, autosave interval, start-up")
    quit_ = _action(w, "quit", "&Quit", w.close, Std.Quit, None, "Quit revstudio")
    if quit_.shortcut().isEmpty():  # Windows and some Linux desktops bind no quit key: Ctrl+Q as elsewhere
        quit_.setShortcut(QKeySequence("Ctrl+Q"))

    undo = w.document.undo_stack.createUndoAction(w, "&Undo")
    undo.setShortcut(QKeySequence(Std.Undo))
    undo.setIcon(icon("undo"))
    undo.setProperty("icon_name", "undo")
    redo = w.document.undo_stack.createRedoAction(w, "&Redo")
    # QKeySequence(Std.Redo) is only the platform's first binding, which is Ctrl+Y offscreen and in
    # Windows-style key schemes: adding Ctrl+Y again made the key ambiguous (neither fired),
    # and Ctrl+Shift+Z was missing.
    keys = [*QKeySequence.keyBindings(Std.Redo), QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")]
    redo.setShortcuts(list({k.toString(): k for k in keys if not k.isEmpty()}.values()))
    redo.setIcon(icon("redo"))
    redo.setProperty("icon_name", "redo")
    _keep_key_in_tip(undo, "Ctrl+Z")
    _keep_key_in_tip(redo, "Ctrl+Shift+Z")
    for name, act in (("undo", undo), ("redo", redo)):
        act.setObjectName(name)
        w.addAction(act)
        w.actions_by_name[name] = act

    view = w.current_view
    _action(w, "cut", "Cu&t", lambda: view().cut(), Std.Cut)
    _action(w, "copy", "&Copy", lambda: view().copy(), Std.Copy)
    _action(w, "paste", "&Paste", lambda: view().paste(), Std.Paste)
    _action(w, "duplicate", "D&uplicate", lambda: view().duplicate(), "Ctrl+D")
    _action(w, "delete", "&Delete", lambda: view().delete_selection(), Std.Delete, "delete",
            "Delete the selected nodes and their wires")
    _action(w, "delete_reconnect", "Delete and &Reconnect", lambda: view().delete_and_reconnect(), "Ctrl+Delete",
            None, "Delete the selected nodes and join what fed them to what they fed")
    _action(w, "select_all", "Select &All", w.select_all, Std.SelectAll)
    _action(w, "quick_add", "&Add Node…", w.quick_add, "Shift+A", None, "Search node types and add one")
    _action(w, "connect", "Co&nnect…", lambda: view().open_connect(), "Ctrl+K", None,
            "Wire the selected node's ports (or remove a wire) from a list: the keyboard's port drag")
    _action(w, "rename", "Rena&me Node", lambda: view().rename_selected(), "F2", None,
            "Rename the selected node in place (Enter renames, Escape cancels)")
    _action(w, "find", "&Find Node…", lambda: view().open_find(), Std.Find, None,
            "Find a node on this canvas by its id or type")
    for way, key, text, tip in (("right", "Alt+Right", "&Next Node (Downstream)", "Select the node this one feeds"),
                                ("left", "Alt+Left", "&Previous Node (Upstream)", "Select the node feeding this one"),
                                ("down", "Alt+Down", "Node &Below (Same Source)", "Select the next node fed by "
                                 "the same node"),
                                ("up", "Alt+Up", "Node &Above (Same Source)", "Select the previous node fed by "
                                 "the same node")):
        _action(w, f"walk_{way}", text, partial(_walk, view, way), key, None, tip)
    _action(w, "group", "&Group Selection", t.group_selection, "Ctrl+G", "group",
            "Collapse the selected nodes into a Group node")
    _action(w, "ungroup", "&Ungroup", t.ungroup_selection, "Ctrl+Shift+G", "ungroup",
            "Replace the selected Group node by its nodes")
    _action(w, "repeat_group", "Repeat T&his Group", t.repeat_selected_group, None, None,
            "Turn the selected Group node into a Repeat of its group (two copies), keeping its wires")
    _action(w, "unroll_repeat", "Unro&ll Repeat", t.unroll_selected_repeat, None, None,
            "Turn the selected Repeat node into its copies as Group nodes in a row, each to ungroup or change alone")
    _action(w, "open_group", "&Open Group", t.open_selected_group, "Tab", None,
            "Edit the selected group's body on its own tab")
    _action(w, "rename_group", "Rename Group…", lambda: w.group_names.rename(), None, None,
            "Rename the current tab's group (or the selected node's) and every node that uses it")

    _action(w, "zoom_in", "Zoom &In", lambda: view().zoom_in(), Std.ZoomIn, "zoom-in", "Zoom in")
    _action(w, "zoom_out", "Zoom &Out", lambda: view().zoom_out(), Std.ZoomOut, "zoom-out", "Zoom out")
    _action(w, "reset_zoom", "&Actual Size", lambda: view().reset_zoom(), "Ctrl+0")
    _action(w, "fit", "&Fit All", lambda: view().fit_all(), "Home", "fit", "Show the whole graph")
    _action(w, "fit_selection", "Fit &Selection", lambda: view().fit_selection(), "F")
    _action(w, "previous_view", "P&revious View", partial(_previous_view, view), "Shift+Home", None,
            "Go back to the view before the last Fit, layout, or a Problem's or search's jump "
            "(views are not undo steps)")
    _action(w, "layout", "Auto &Layout", lambda: view().auto_layout(False), "Ctrl+L", "layout",
            "Arrange the nodes left to right")
    _action(w, "layout_selection", "Layout &Selection", lambda: view().auto_layout(True), "Ctrl+Shift+L")
    _action(w, "align_h", "Align Centres &Horizontally", lambda: view().align("horizontal"), "Ctrl+Shift+H")
    _action(w, "align_v", "Align Centres &Vertically", lambda: view().align("vertical"), "Ctrl+Shift+V")
    for side in ("left", "right", "top", "bottom"):
        _action(w, f"align_{side}", f"Align {side.title()} Edges", partial(_align, view, side))
    _action(w, "distribute_h", "Distribute Hori&zontally", lambda: view().distribute("horizontal"))
    _action(w, "distribute_v", "Distribute Verti&cally", lambda: view().distribute("vertical"))
    theme = _action(w, "dark_theme", "&Dark Theme", w.toggle_theme, "Ctrl+Shift+T", "theme",
                    "Switch between the dark and light theme")
    theme.setCheckable(True)
    overview = _action(w, "overview", "O&verview", w.toggle_overview, None, None,
                       "A map of the whole graph in the canvas's corner, shown while the graph does not fit")
    overview.setCheckable(True)
    _action(w, "focus_overview", "&Focus Overview", w.focus_overview, "Ctrl+Shift+O", None,
            "Move the keys to the overview: arrows move the view, Home/End go to the Inputs/Outputs, "
            "Escape returns to the canvas")
    _action(w, "measure_memory", "&Measure Memory in Memory Tab", w.measure_memory, "Ctrl+M", None,
            "Show the Memory tab and measure one training step per mode at its batch, device and precision, "
            "beside the estimate")
    _action(w, "memory_depth", "Memory vs &Depth in Memory Tab", w.memory_depth, None, None,
            "Show the Memory tab and measure one training step per mode at each depth of the project's Repeat "
            "node: peak against depth, measured and estimated, and each mode's growth per added block")
    _action(w, "about", "&About revstudio", w.about)
    _action(w, "shortcuts", "&Keyboard Shortcuts", w.show_shortcuts, "F1")
    _action(w, "reset_layout", "Reset &Window Layout", w.reset_layout)
    _action(w, "next_pane", "Ne&xt Panel", partial(pane_focus.cycle, w, 1), "F6", None,
            "Move the keyboard focus to the next panel: Nodes, canvas, Inspector, History, Output")
    _action(w, "prev_pane", "Pre&vious Panel", partial(pane_focus.cycle, w, -1), "Shift+F6", None,
            "Move the keyboard focus to the previous panel")


def _align(view: Callable[[], Any], side: str) -> None:
    view().align(side)


def _walk(view: Callable[[], Any], direction: str) -> None:
    view().walk(direction)


def _previous_view(view: Callable[[], Any]) -> None:
    if not view().previous_view():
        view().message.emit("No previous view to go back to (Fit, Ctrl+L and a Problem's or a search's "
                            "click each keep the view they leave)")


def _fill(menu: QMenu | QToolBar, actions: dict[str, QAction], names: Sequence[str | None]) -> None:
    for name in names:
        if name is None:
            menu.addSeparator()
        else:
            menu.addAction(actions[name])


def build_menus(w: MainWindow) -> None:
    a = w.actions_by_name
    bar = w.menuBar()
    file_menu = bar.addMenu("&File")
    for name in ("new", "new_window", "open", "open_in_new_window"):
        file_menu.addAction(a[name])
    w.recent_menu = file_menu.addMenu("Open &Recent")
    w.examples_menu = file_menu.addMenu("New from E&xample")
    file_menu.addSeparator()
    for name in ("save", "save_as", "export", "export_onnx"):
        file_menu.addAction(a[name])
    file_menu.addSeparator()
    file_menu.addAction(a["preferences"])
    file_menu.addSeparator()
    file_menu.addAction(a["quit"])

    edit = bar.addMenu("&Edit")
    _fill(edit, a, ("undo", "redo", None, "cut", "copy", "paste", "duplicate", "delete", "delete_reconnect", None,
                    "select_all", "find", "quick_add", "connect", "rename", None, "group", "ungroup", "repeat_group",
                    "unroll_repeat", "open_group", "rename_group"))
    _fill(edit.addMenu("&Go To"), a, ("walk_right", "walk_left", "walk_down", "walk_up"))
    w.groups_menu = edit.addMenu("Gro&ups")  # every group, unused ones marked, each with Open/Rename/Delete
    w.groups_menu.aboutToShow.connect(lambda: w.group_names.fill_menu(w.groups_menu))

    view = bar.addMenu("&View")
    _fill(view, a, ("zoom_in", "zoom_out", "reset_zoom", "fit", "fit_selection", "previous_view", None, "layout",
                    "layout_selection"))
    align = view.addMenu("&Align")
    _fill(align, a, ("align_h", "align_v", "align_left", "align_right", "align_top", "align_bottom", None,
                     "distribute_h", "distribute_v"))
    view.addSeparator()
    view.addAction(a["dark_theme"])
    view.addAction(a["overview"])
    view.addAction(a["focus_overview"])
    view.addSeparator()
    _fill(view, a, ("next_pane", "prev_pane"))
    w.panels_menu = view.addMenu("&Panels")
    view.addAction(a["reset_layout"])

    tools = bar.addMenu("&Tools")
    tools.addAction(a["measure_memory"])

    help_menu = bar.addMenu("&Help")
    help_menu.addAction(a["shortcuts"])
    help_menu.addAction(a["about"])


def build_toolbar(w: MainWindow) -> QToolBar:
    a = w.actions_by_name
    bar = QToolBar("Main toolbar", w)
    bar.setObjectName("mainToolbar")
    bar.setMovable(False)
    bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
    _fill(bar, a, ("new", "open", "save", None, "undo", "redo", None, "delete", "group", "ungroup",
                   None, "zoom_out", "zoom_in", "fit", "layout", None, "dark_theme"))
    w.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
    return bar


def retint(w: MainWindow) -> None:
    """Re-render action icons in the current theme's colour."""
    for act in w.actions_by_name.values():
        name = act.property("icon_name")
        if name:
            act.setIcon(icon(name))


def fill_recent(menu: QMenu, paths: list[str], open_path: Callable[[str], object],
                clear: Callable[[], object]) -> None:
    menu.clear()
    for i, path in enumerate(paths):
        label = f"&{i + 1}  {path}" if i < 9 else path
        act = menu.addAction(label)
        act.triggered.connect(lambda _c=False, p=path: open_path(p))
    if paths:
        menu.addSeparator()
        menu.addAction("Clear Recent Files").triggered.connect(lambda _c=False: clear())
    else:
        menu.addAction("No recent files").setEnabled(False)
