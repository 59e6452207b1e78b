"""F1's shortcut list and docs/editor.md name every key with the same word.

The list is built from the actions in Qt's native text ("Del", "Ctrl+Del"), which is also what
the menus show; the docs said "Delete" and "Ctrl+Delete", so a user read two names for one key.
"""
from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtGui import QKeySequence

DOCS = Path(__file__).resolve().parents[2] / "docs" / "editor.md"


def _doc_keys() -> set[str]:
    """Every key sequence in the first column of editor.md's key tables ("| Keys | Action |")."""
    keys: set[str] = set()
    in_table = False
    for line in DOCS.read_text().splitlines():
        if line.startswith("| Keys |"):
            in_table = True
            continue
        if not line.startswith("|"):
            in_table = False
        if not in_table or line.startswith("|---"):
            continue
        first = line.split("|")[1]
        for part in re.split(r" / |[()]", first):
            part = part.strip()
            # gestures ("Space+drag", "Shift+click", "double-click a header") are not key sequences
            if part and not re.search(r"click|drag|button|header", part):
                keys.add(part)
    return keys


def _f1_keys(window, dialogs, monkeypatch) -> set[str]:
    said: list[str] = []
    monkeypatch.setattr(dialogs, "info", lambda parent, title, text: said.append(text))
    window.show_shortcuts()
    return {k for cell in re.findall(r"<b>(.*?)</b>", said[0]) for k in cell.split(", ")}


def test_every_key_in_the_f1_list_is_named_alike_in_the_docs(make_window, dialogs, monkeypatch):
    window = make_window()
    shown = _f1_keys(window, dialogs, monkeypatch)
    assert {"Del", "Ctrl+Del"} <= shown
    # the platform's own extra undo/redo bindings (Alt+Shift+Backspace under X11) vary by desktop
    native = QKeySequence.SequenceFormat.NativeText
    platform = {k.toString(native) for std in (QKeySequence.StandardKey.Undo, QKeySequence.StandardKey.Redo)
                for k in QKeySequence.keyBindings(std)}
    documented = _doc_keys()
    missing = sorted(shown - documented - (platform - {"Ctrl+Z", "Ctrl+Shift+Z", "Ctrl+Y"}))
    assert not missing, f"F1 shows {missing}, which docs/editor.md's key tables do not name"


def test_the_docs_write_each_key_as_qt_shows_it():
    native = QKeySequence.SequenceFormat.NativeText
    differ = {k: QKeySequence(k).toString(native) for k in _doc_keys()}
    differ = {k: shown for k, shown in differ.items() if shown != k}
    assert not differ, f"docs/editor.md names keys the app shows otherwise: {differ}"
