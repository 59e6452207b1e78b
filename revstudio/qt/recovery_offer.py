"""Which autosaved copies to offer when a particular file is opened, and what to say of the rest.

A start without a file (or File > Open of no file in particular) offers the newest copy of any
project. A file named at start, or opened from the File menu, offers only that file's own copy:
restoring another project's copy there would replace the file asked for. The others stay in the
recovery folder and are offered when their file is opened, or at a start without a file.
"""
from __future__ import annotations

import os
from collections.abc import Iterable

from revstudio.qt.autosave import Recovery, RecoveryStore


def same_file(a: str, b: str) -> bool:
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def pending_for(store: RecoveryStore, known: Iterable[str], path: str | None) -> list[Recovery]:
    """The copies to offer, newest first: every pending one, or only ``path``'s."""
    found = store.pending(known)
    return found if path is None else [r for r in found if r.path is not None and same_file(r.path, path)]


def others_note(store: RecoveryStore, known: Iterable[str], path: str) -> str:
    """A status-bar note on the copies of other projects still waiting ('' when there are none)."""
    others = [r for r in store.pending(known) if r.path is None or not same_file(r.path, path)]
    if not others:
        return ""
    names = ", ".join(os.path.basename(r.path) if r.path else f"unsaved '{r.name}'" for r in others[:3])
    more = f" and {len(others) - 3} more" if len(others) > 3 else ""
    if len(others) == 1:
        return (f"An autosaved copy of another project from a crash waits ({names}): open its file, or start "
                "revstudio without a file, to restore it")
    return (f"{len(others)} autosaved copies of other projects from a crash wait ({names}{more}): open their "
            "files, or start revstudio without a file, to restore them")
