"""File > New Window and Open in New Window…: another editor, for a second project at once.

Each window is its own ``revstudio [FILE]`` process, as when started twice from a terminal:
a crash or a kill of one never takes the other down, each keeps its own recovery file, and
nodes copied in one paste into the other through the system clipboard.
"""
from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable

from PySide6.QtCore import QPoint, QProcess
from PySide6.QtWidgets import QWidget

from revstudio.cli import child_argv, child_env

log = logging.getLogger("revstudio")

# Set for an editor started by New Window or Open in New Window: it stands a little below and right
# of the window it was asked from (not exactly over it, as a saved layout would put it), and New
# Window's starts on an empty project even where Preferences say to reopen the last one (which is
# the project of the window it was asked from).
NEW_WINDOW = "REVSTUDIO_NEW_WINDOW"
CASCADE = 32  # px right and down


@functools.cache
def started_by_new_window() -> bool:
    """Whether this editor was started by New Window (read once: its own children do not inherit it)."""
    return os.environ.pop(NEW_WINDOW, None) == "1"


def cascade(window: QWidget) -> None:
    """Move ``window`` (placed where the saved layout puts every window) down and right a step."""
    window.move(window.pos() + QPoint(CASCADE, CASCADE))


def editor_argv(path: str | None = None) -> list[str]:
    """The argv of another editor window (on ``path``, made absolute: its folder is not ours):
    ``revstudio [FILE]`` through :func:`child_argv`, which also knows the frozen app's form."""
    args = [os.path.abspath(path)] if path else []
    return child_argv("revstudio", *args)


def _start(argv: list[str]) -> bool:
    process = QProcess()
    process.setProgram(argv[0])
    process.setArguments(argv[1:])
    process.setWorkingDirectory(os.path.expanduser("~"))  # (a folder that outlives this window)
    env = process.processEnvironment()
    env.clear()
    for key, value in child_env().items():
        env.insert(key, value)
    env.insert(NEW_WINDOW, "1")
    process.setProcessEnvironment(env)
    return bool(process.startDetached())  # (the instance method: program, arguments, folder, environment)


def open_window(path: str | None, say: Callable[[str], object]) -> bool:
    """Start another editor window (on ``path``); ``say`` gets the status-bar note."""
    argv = editor_argv(path)
    what = os.path.basename(path) if path else "a new project"
    if not _start(argv):
        log.error("could not start another window: %s", " ".join(argv))
        say(f"Could not open a new window for {what}: {argv[0]} did not start (see Log)")
        return False
    log.info("new window: %s", " ".join(argv))
    say(f"Opening a new window for {what}…")
    return True
