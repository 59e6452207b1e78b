"""Every menu path the README and docs/*.md name ("Run > Run Settings") is in the menu bar as written.

The docs name an item without the "…" its menu shows; a path whose item was renamed, or written
"Export Python..." with three dots where no item is spelled so, is a path a user cannot follow.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MENU_PATH = re.compile(r"\b(File|Edit|View|Tools|Run|Help) > ")


def _menu_tree(window) -> dict[str, dict]:
    def items(menu) -> dict[str, dict]:
        tree: dict[str, dict] = {}
        for action in menu.actions():
            if not action.isSeparator():
                name = action.text().replace("&", "").removesuffix("…")
                tree[name] = items(action.menu()) if action.menu() else {}
        return tree

    return {a.text().replace("&", ""): items(a.menu()) for a in window.menuBar().actions()}


def _ends_a_name(rest: str) -> bool:
    """The item name is followed by the end of the text, a space, punctuation or markup, not more of a name."""
    return not rest or rest[0] in " *,;:)…\n" or (rest[0] == "." and not rest.startswith(".."))


def _follows(tree: dict[str, dict], text: str) -> bool:
    """``text`` (what follows "Menu > ") starts with an item of ``tree``, and any deeper "> Item" too."""
    for name in sorted(tree, key=len, reverse=True):
        rest = text[len(name):]
        if text.startswith(name) and _ends_a_name(rest):
            if rest.startswith(" > ") and tree[name]:
                return _follows(tree[name], rest[3:])
            return True
    return False


def _named_paths() -> list[tuple[str, str, str]]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in MENU_PATH.finditer(text):
            found.append((page.name, match.group(1), text[match.end():match.end() + 80]))
    return found


def test_the_docs_name_menu_paths():
    menus = {menu for _, menu, _ in _named_paths()}
    assert {"File", "Run", "View", "Tools"} <= menus  # the scan reads the pages it should


def test_every_menu_path_in_the_docs_is_in_the_menu_bar(make_window):
    tree = _menu_tree(make_window())
    wrong = [f"{page}: {menu} > {after.splitlines()[0][:40]}" for page, menu, after in _named_paths()
             if menu not in tree or not _follows(tree[menu], after)]
    assert not wrong, f"no such menu item (menus: {sorted(tree)}): {wrong}"


def _walk(menu, path=()):
    for action in menu.actions():
        if action.isSeparator():
            continue
        if action.menu():
            yield from _walk(action.menu(), (*path, action.text().replace("&", "")))
        else:
            yield path, action


def test_the_canvas_context_menu_names_each_action_as_the_menu_bar_does(make_window):
    """A right-click said "Layout graph", "Fit to view", "Add node…", "Distribute horizontal" and
    "Group selection" for View > Auto Layout, View > Fit All, Edit > Add Node…, View > Align >
    Distribute Horizontally and Edit > Group Selection: the docs and F1 name the menu bar's items."""
    from revstudio.core.examples import example_projects

    window = make_window(example_projects()["revnet_coupling"])
    bar = {action.text().replace("&", ""): action for _, action in _walk(window.menuBar())}
    view = window.tabs.main_view()
    view.select_nodes(["stem", "blocks", "pool"])
    menu, _ = view.build_context_menu(view.scene().node_items["blocks"].sceneBoundingRect().center())
    items = list(_walk(menu))
    assert len(items) > 15
    wrong = [f"{' > '.join(path + (action.text(),))}" for path, action in items if action.text() not in bar]
    assert not wrong, f"context-menu items the menu bar names otherwise: {wrong}"
    shortcuts = {a.shortcut().toString(): name for name, a in bar.items() if not a.shortcut().isEmpty()}
    clash = [(a.text(), shortcuts[a.shortcut().toString()]) for _, a in items
             if not a.shortcut().isEmpty() and shortcuts.get(a.shortcut().toString(), a.text()) != a.text()]
    assert not clash


def test_buttons_end_in_an_ellipsis_as_the_menus_do(make_window):
    """The Code tab's button read "Export..." beside File > Export Python… and the Runs tab's "Delete…"."""
    from PySide6.QtWidgets import QAbstractButton

    texts = [b.text() for b in make_window().findChildren(QAbstractButton)]
    assert any(t.endswith("…") for t in texts)
    assert not [t for t in texts if t.endswith("...")]


def test_a_button_for_a_menu_action_is_spelled_as_the_menu_item(make_window):
    """The Memory tab's "Measure memory" and the inspector's "Rename group…" did what Tools > Measure Memory
    in Memory Tab and Edit > Rename Group… do, spelled otherwise (the tab's button names the item's first
    words: in the tab, "in Memory Tab" goes without saying)."""
    from PySide6.QtWidgets import QAbstractButton

    window = make_window()
    bar = {a.text().replace("&", ""): a for _, a in _walk(window.menuBar())}
    folded = {name.casefold(): name for name in bar}
    texts = {b.text() for b in window.findChildren(QAbstractButton)} | {window.inspector.rename_group.text()}
    button = window.memory_panel.measure_button.text()
    assert button in texts and window.actions_by_name["measure_memory"].text().replace("&", "") == \
        f"{button} in Memory Tab"
    wrong = [(t, folded[t.casefold()]) for t in texts if t.casefold() in folded and t != folded[t.casefold()]]
    assert not wrong


def test_no_two_menu_bar_items_share_a_name(make_window):
    """Tools > Measure Memory (the Memory tab, at its batch, device and precision) and Run > Measure Memory
    (a window of its own, at the training batch) were spelled alike: a user, the docs and F1 could not
    tell which was which."""
    window = make_window()
    names: dict[str, list[str]] = {}
    for path, action in _walk(window.menuBar()):
        name = action.text().replace("&", "").removesuffix("…")
        names.setdefault(name, []).append(" > ".join((*path, name)))
    assert "Gradient Check" in names  # (the Run menu is walked too)
    shared = {name: paths for name, paths in names.items() if len(paths) > 1}
    assert not shared, f"menu items spelled alike: {shared}"
