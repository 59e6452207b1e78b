"""The project file's own words: its format tag, who wrote it, and the one error both its
reader (``project``) and its writer (``project_write``) raise."""
from __future__ import annotations

import re

from revstudio import __version__

FORMAT = "revstudio"
MADE_BY = f"revstudio {__version__}"
# A node's canvas position, in pixels, lies within +-MAX_POS: far beyond any drawing, and far
# below where Qt's canvas breaks (positions of 1e13 crashed the editor when it opened the file).
MAX_POS = 1e9
# A training run folder's copy of the project it trained (RUN_DIR/project.revs, CONTRACTS section 4):
# the one spelling of that name, for the core's readers and every layer above.
SNAPSHOT = "project.revs"


def made_by_version(made_by: str) -> tuple[int, ...]:
    """``"revstudio 0.9.1"`` -> (0, 9, 1); () when it names no version this reader can compare."""
    match = re.fullmatch(r"revstudio (\d{1,9}(?:\.\d{1,9}){0,3})\S*", made_by.strip())
    return tuple(int(part) for part in match.group(1).split(".")) if match else ()


def made_by_newer(made_by: str) -> bool:
    """Whether ``made_by`` names a revstudio newer than this one (whose file may hold what this
    one does not know: a field, a node type, a parameter)."""
    return made_by_version(made_by) > made_by_version(MADE_BY)


def reads_as_project(path: str) -> bool:
    """Whether the file at ``path`` is a project (a ``.revs`` file or a ``.py`` export by its name, or JSON by
    its first bytes: a project saved under another name) where trained weights or a run were asked for; the
    commands then say so, not torch's unpickling error. One test for ``evaluate`` and the checkpoint reader."""
    if path.endswith((".revs", ".py")):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(64).lstrip().startswith(b"{")
    except OSError:
        return False


class ProjectError(ValueError):
    """A project file cannot be read or written; the message names the file and the place."""

    def __init__(self, message: str, source: str = "", where: str = "") -> None:
        super().__init__(message)
        self.source = source
        self.where = where


__all__ = ["FORMAT", "MADE_BY", "MAX_POS", "ProjectError", "made_by_newer", "made_by_version", "reads_as_project"]
