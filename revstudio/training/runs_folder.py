"""The ``runs/`` folder beside a project, where every run of it gets a folder of its own.

Runs are each machine's own (checkpoints of megabytes, metrics, a snapshot whose data paths are
absolute), not a project's source: a ``runs/`` folder revstudio makes holds a ``.gitignore`` that
keeps it out of git (as Python's venv and pytest's cache do). A team that wants its runs in git
deletes that file; an existing folder is never touched, so it is not written again.
"""
from __future__ import annotations

import datetime
import errno
import os

GITIGNORE = ".gitignore"
GITIGNORE_TEXT = (
    "# Made by revstudio: training runs (checkpoints, metrics) stay out of git.\n"
    "# Delete this file to commit them.\n"
    "*\n"
)


def make_runs_folder(root: str | os.PathLike[str]) -> None:
    """Make ``root`` (and the folders above it) where it does not exist, with the ``.gitignore``
    that keeps it out of git. Raises OSError where the folder cannot be made; a ``.gitignore``
    that cannot be written (a race with another run making it) is no reason to refuse a run."""
    path = os.fspath(root)
    if os.path.isdir(path):
        return
    if os.path.lexists(path):  # a file named runs: said as a folder in the way is (makedirs says "File exists")
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
    os.makedirs(path, exist_ok=True)
    try:
        with open(os.path.join(path, GITIGNORE), "x", encoding="utf-8") as f:
            f.write(GITIGNORE_TEXT)
    except OSError:
        pass


def drop_own_gitignore(root: str | os.PathLike[str]) -> None:
    """Remove the ``.gitignore`` ``make_runs_folder`` wrote (exactly its text), so a folder made for
    a run that was then refused can be removed whole."""
    path = os.path.join(os.fspath(root), GITIGNORE)
    try:
        with open(path, encoding="utf-8") as f:
            own = f.read() == GITIGNORE_TEXT
        if own:
            os.remove(path)
    except OSError:
        pass


def app_runs_folder() -> str:
    """``runs/`` in revstudio's data folder (``core.app_data``: ``~/.local/share/revstudio``,
    ``~/Library/Application Support/revstudio`` or ``%APPDATA%\\revstudio``), where the app puts the runs
    of a project it has no folder of the user's for; the runs an earlier revstudio kept in
    ``.../revstudio/revstudio/runs`` are moved there on first use."""
    from revstudio.core import app_data

    return app_data.path("runs")


def _in_shipped_folder(folder: str) -> bool:
    """Whether ``folder`` is revstudio's own (its resources folder or one below it)."""
    from revstudio.resources import is_shipped

    return is_shipped(os.path.join(folder, "runs"))  # (a file in it: the resources folder itself counts)


def runs_folder(project: str) -> str:
    """Where the runs of ``project`` go by default: ``runs/`` beside it, but for a shipped example
    (``revstudio examples NAME``'s path, inside revstudio's own files) ``runs/`` in the current folder,
    or in the app's data folder (:func:`app_runs_folder`) where the current folder is revstudio's own too."""
    from revstudio.resources import is_shipped

    if is_shipped(project):
        here = os.getcwd()
        return app_runs_folder() if _in_shipped_folder(here) else os.path.join(here, "runs")
    return os.path.join(os.path.dirname(os.path.abspath(project)), "runs")


def shipped_note(project: str) -> str:
    """The note ``train`` prints when a shipped example's runs go to the current folder, or to the
    app's data folder where the current folder is revstudio's own ('' otherwise)."""
    from revstudio.resources import is_shipped

    if not is_shipped(project):
        return ""
    name = os.path.splitext(os.path.basename(project))[0]
    where = ("the app's data folder: the current folder is revstudio's own too" if _in_shipped_folder(os.getcwd())
             else "the current folder")
    return (f"note: {project} is an example shipped with revstudio, so its runs go to {runs_folder(project)} "
            f"({where}), not into revstudio's own files; to keep and edit it, copy it: "
            f"cp \"$(revstudio examples {name})\" . (or the app's File > New from Example, then Save As)")


def default_run_dir(project: str) -> str:
    folder = runs_folder(project)
    stem = os.path.splitext(os.path.basename(project))[0]
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = os.path.join(folder, f"{stem}-{stamp}")
    n = 1
    while os.path.exists(path):
        n += 1
        path = os.path.join(folder, f"{stem}-{stamp}-{n}")
    return path
