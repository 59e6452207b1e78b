"""Writing an export to disk atomically, so a failed write never leaves half a file.

The text goes to a temporary file in the target folder, is flushed and
fsynced, then renamed over the destination (one step on every platform).
"""
from __future__ import annotations

import os
import time

from revstudio.core import tempfiles

PREFIX, SUFFIX = ".revstudio-export-", ".py.tmp"


def write_source(source: str, path: str | os.PathLike[str]) -> None:
    """Write ``source`` to ``path`` (UTF-8, ``\\n`` line ends) atomically; raises ``OSError``."""
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    started = time.time()
    fd, tmp = tempfiles.create(folder, PREFIX, SUFFIX)  # locked until closed
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(source)
            handle.flush()
            # mkstemp makes the file 0600; an export is an ordinary file: the existing
            # file's mode, or what the user's umask gives a new one (0644 typically)
            os.fchmod(handle.fileno(), _file_mode(target))
            os.fsync(handle.fileno())
        os.replace(tmp, target)
        tempfiles.remove_stale(folder, PREFIX, SUFFIX, started)  # left by exports that were killed
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _file_mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
