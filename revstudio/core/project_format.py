"""The project file's own words: its format tag, who wrote it, and the one error both its
reader (``project``) and its writer (``project_write``) raise."""
from __future__ import annotations

from revstudio import __version__

FORMAT = "revstudio"
MADE_BY = f"revstudio {__version__}"
# A node's canvas position, in pixels, lies within +-MAX_POS: far beyond any drawing, and far
# below where Qt's canvas breaks (positions of 1e13 crashed the editor when it opened the file).
MAX_POS = 1e9


class ProjectError(ValueError):
    """A project file cannot be read or written; the message names the file and the place."""

    def __init__(self, message: str, source: str = "", where: str = "") -> None:
        super().__init__(message)
        self.source = source
        self.where = where


__all__ = ["FORMAT", "MADE_BY", "MAX_POS", "ProjectError"]
