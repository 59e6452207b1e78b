"""Writing an export to disk atomically, so a failed write never leaves half a file.

The text goes through :func:`revstudio.core.tempfiles.write_atomic`: a temp file
in the target folder, fsync, the umask's mode (never mkstemp's 0600), rename.
"""
from __future__ import annotations

import os

from revstudio.core import tempfiles

PREFIX, SUFFIX = ".revstudio-export-", ".py.tmp"


def write_source(source: str, path: str | os.PathLike[str]) -> None:
    """Write ``source`` to ``path`` (UTF-8, ``\\n`` line ends) atomically; raises ``OSError``."""
    tempfiles.write_atomic(path, source, prefix=PREFIX, suffix=SUFFIX)
