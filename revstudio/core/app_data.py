"""revstudio's data folder (the app's runs of unsaved projects and shipped examples, its recovery copies).

One folder named ``revstudio`` in the platform's place for an application's data:
``$XDG_DATA_HOME/revstudio`` (``~/.local/share/revstudio``), ``~/Library/Application Support/revstudio``
or ``%APPDATA%\\revstudio``. The app, the CLI's ``train`` and the docs name this one folder; the app
does not ask Qt (its ``AppDataLocation`` joins organisation and application names, which made it
``~/.local/share/revstudio/revstudio``).

Runs and recovery copies an earlier revstudio left in that doubled folder are moved here on first use
(one rename each, atomic on the one disk both are on); where a move cannot be made, the old folder is
used as it is, so nothing a user had is hidden or lost. Torch-free and Qt-free.
"""
from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger("revstudio")

NAME = "revstudio"


def _base() -> str:
    """The platform's folder for applications' data (Qt's ``GenericDataLocation``: an ``XDG_DATA_HOME``
    that is not absolute is ignored, as the XDG specification says)."""
    if sys.platform == "win32":
        return os.environ.get("APPDATA") or os.path.expanduser(os.path.join("~", "AppData", "Roaming"))
    if sys.platform == "darwin":
        return os.path.expanduser(os.path.join("~", "Library", "Application Support"))
    xdg = os.environ.get("XDG_DATA_HOME", "")
    return xdg if os.path.isabs(xdg) else os.path.expanduser(os.path.join("~", ".local", "share"))


def data_folder() -> str:
    """revstudio's data folder: ``<the platform's data folder>/revstudio``."""
    return os.path.join(_base(), NAME)


def legacy_folder() -> str:
    """Where revstudio 0.1's app kept its data: ``revstudio`` twice (Qt's organisation and application)."""
    return os.path.join(data_folder(), NAME)


def _move_entries(old: str, new: str) -> list[str]:
    """Move what ``old`` holds into ``new`` (both folders), one entry at a time; returns the names
    that stay in ``old`` (one ``new`` already has, or a move that failed). A ``.gitignore`` that ``new``
    has too is the same file revstudio wrote: the old one is dropped."""
    left = []
    for name in sorted(os.listdir(old)):
        source, target = os.path.join(old, name), os.path.join(new, name)
        try:
            if os.path.lexists(target):
                if name == ".gitignore":
                    os.remove(source)
                    continue
                left.append(name)
                continue
            os.rename(source, target)
        except OSError:
            left.append(name)
    return left


def path(name: str) -> str:
    """``name`` (``runs``, ``recovery``) in revstudio's data folder, with what revstudio 0.1 kept under
    that name moved in first. Where the old folder cannot be moved (another disk's mount, no write
    permission), its path is returned, so a user's runs are still listed and written where they were."""
    new = os.path.join(data_folder(), name)
    old = os.path.join(legacy_folder(), name)
    if not os.path.isdir(old):
        return new
    if not os.path.lexists(new):
        try:
            os.rename(old, new)
        except OSError as exc:
            if not os.path.isdir(old):  # (another revstudio moved it just now)
                return new
            log.warning("revstudio keeps using %s (it could not be moved to %s: %s)", old, new, exc)
            return old
        log.warning("revstudio moved %s to %s (its data folder is now %s)", old, new, data_folder())
        _drop_if_empty(legacy_folder())
        return new
    if not os.path.isdir(new):
        return old  # (a file in the way of the new folder: the old one stays in use)
    left = _move_entries(old, new)
    if left:
        log.warning("revstudio could not move %s from %s to %s (a name it has already); move or rename them "
                    "by hand", ", ".join(left), old, new)
    else:
        _drop_if_empty(old)
        _drop_if_empty(legacy_folder())
    return new


def _drop_if_empty(folder: str) -> None:
    try:
        os.rmdir(folder)
    except OSError:
        pass


__all__ = ["data_folder", "legacy_folder", "path"]
