"""Temp files of atomic writes: created locked, and the ones killed writes left behind removed.

A save writes ``.NAME.XXXXXXXX.tmp`` beside the target and renames it over the
target. A process killed in between leaves the temp file behind; the next save
of the same target removes such leftovers, but only files of exactly our own
pattern, owned by this user, older than the running save and (where the
platform can tell) not held open by a live writer: every writer holds an
exclusive lock on its temp file until the rename.

:func:`write_atomic` is the one way the product writes a file that must never
be seen half-written: projects, exports, run files, snapshots and autosaves.
"""
from __future__ import annotations

import os
import re
import stat
import tempfile
import time

try:
    import fcntl
except ImportError:  # Windows: no advisory locks, age alone decides
    fcntl = None  # type: ignore[assignment]

# mkstemp's random part: eight characters of this alphabet
_RANDOM = r"[a-z0-9_]{8}"
# without locks a leftover must be much older than any save can take
UNLOCKED_AGE_S = 600.0


def create(directory: str, prefix: str, suffix: str) -> tuple[int, str]:
    """``mkstemp`` in ``directory``, with an exclusive lock held on the file until it is closed."""
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a file system without locks: the age rule still protects it
            pass
    return fd, path


def remove_stale(directory: str, prefix: str, suffix: str, started: float, keep: str | None = None) -> list[str]:
    """Remove temp files ``prefix + 8 random characters + suffix`` that no live save owns.

    ``started``: when the running save began (``time.time()``); only files last
    written before it are candidates. Returns the paths removed; never raises.
    """
    pattern = re.compile(re.escape(prefix) + _RANDOM + re.escape(suffix) + r"\Z")
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        if not pattern.match(name):
            continue
        path = os.path.join(directory, name)
        if keep is not None and os.path.abspath(path) == os.path.abspath(keep):
            continue
        if _remove_if_stale(path, started):
            removed.append(path)
    return removed


def _remove_if_stale(path: str, started: float) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode):  # never follow or remove a link or a folder
        return False
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return False
    if fcntl is None:
        if info.st_mtime >= started - UNLOCKED_AGE_S:
            return False
        return _unlink(path)
    if info.st_mtime >= started - 1.0:  # written just now: a save racing with ours
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a live writer holds it
        same = os.fstat(fd)
        if (same.st_ino, same.st_dev) != (info.st_ino, info.st_dev):
            return False  # replaced meanwhile
        return _unlink(path)
    finally:
        os.close(fd)


def file_mode(path: str) -> int:
    """The mode a rewrite of ``path`` should get: the existing file's, or what the umask gives
    a new file (``mkstemp`` makes 0600 files; a user expects 0644 with the usual umask)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, prefix: str | None = None,
                 suffix: str = ".tmp", make_folder: bool = False) -> None:
    """Write ``data`` (``str`` as UTF-8, no newline translation) so that at any moment the old
    file or the whole new one is at ``path``: a locked temp file beside it, fsync, the mode
    of :func:`file_mode`, rename, then removal of leftovers of killed writes of the same name.

    A link is written through to its file and stays a link. A device, pipe or socket
    (``-o /dev/null``, ``/dev/stdout``) is written into, as ``cp`` does: renaming over it
    would replace the device with a plain file. ``make_folder`` creates a missing folder
    (a run directory); otherwise a missing folder is an error.
    Raises ``OSError`` with the file on disk unchanged; the temp file never outlives a failure.
    """
    target = os.fspath(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if _is_special(target):
        with open(target, "wb") as handle:
            handle.write(payload)
        return
    if os.path.islink(target):
        target = os.path.realpath(target)
    folder = os.path.dirname(os.path.abspath(target))
    if make_folder:
        os.makedirs(folder, exist_ok=True)
    if prefix is None:
        prefix = f".{os.path.basename(target)[:100]}."
    started = time.time()
    fd, tmp = create(folder, prefix, suffix)  # locked until closed
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fchmod(handle.fileno(), file_mode(target))
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        _unlink(tmp)
        raise
    remove_stale(folder, prefix, suffix, started)
    _fsync_folder(folder)


def _is_special(path: str) -> bool:
    """Whether ``path`` (links followed) is there and neither a plain file nor a folder."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _fsync_folder(folder: str) -> None:
    """Make a rename durable (best effort: not every platform can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


__all__ = ["UNLOCKED_AGE_S", "create", "file_mode", "remove_stale", "write_atomic"]
