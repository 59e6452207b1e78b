"""Where an export lands: written atomically, its project's data paths starting from there.

The text goes through :func:`revstudio.core.tempfiles.write_atomic`: a temp file
in the target folder, fsync, the umask's mode (never mkstemp's 0600), rename.
:func:`relocated_training` rewrites relative data paths for the export's folder: the
exported script and a reopened export both resolve them from the ``.py`` file's folder.
"""
from __future__ import annotations

import os
from typing import Any

from revstudio.core import tempfiles

PREFIX, SUFFIX = ".revstudio-export-", ".py.tmp"


def write_source(source: str, path: str | os.PathLike[str]) -> None:
    """Write ``source`` to ``path`` (UTF-8, ``\\n`` line ends) atomically; raises ``OSError``."""
    tempfiles.write_atomic(path, source, prefix=PREFIX, suffix=SUFFIX)


def relocated_training(section: dict[str, Any], project: str | os.PathLike[str],
                       output: str | os.PathLike[str]) -> dict[str, Any]:
    """The training section with relative data paths made relative to ``output``'s folder
    instead of ``project``'s, so they name the same files from there (a path that cannot
    be relative to it, on another Windows drive, becomes absolute)."""
    from revstudio.training.sources import DataError, parse_spec

    out = dict(section)
    src, dst = os.path.dirname(os.path.abspath(project)), os.path.dirname(os.path.abspath(output))
    if src == dst:
        return out
    for key in ("data", "val_data"):
        value = out.get(key)
        if not isinstance(value, str):
            continue
        try:
            kind, path = parse_spec(value)
        except DataError:
            continue  # the export's own check names the bad value
        if kind == "synthetic" or os.path.isabs(os.path.expanduser(path)):
            continue
        target = os.path.normpath(os.path.join(src, path))
        try:
            moved = os.path.relpath(target, dst).replace(os.sep, "/")
        except ValueError:  # another drive: no relative path leads there
            moved = target
        out[key] = f"{kind}:{moved}" if kind in ("mnist", "cifar10") else moved
    return out
