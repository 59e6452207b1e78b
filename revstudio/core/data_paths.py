"""Where a project's data paths start and how a saved file stores them (paths only: no torch, no reading).

A relative data path in a project's ``training`` section starts at the folder of the file the
project was read from (``Graph.source``). Saving into another folder re-expresses it
(:func:`portable_spec`) so it names the same data from there: relative to the new file where the
data lies in its folder tree or at most ``MAX_UP`` folders above it, else absolute. An absolute
path inside someone's home folder names nothing on a teammate's machine (:func:`personal_paths`).
``revstudio.training.data`` re-exports these for the run settings and the trainer.
"""
from __future__ import annotations

import os
import re
from typing import Any

# The keys of a ``training`` section that name data (their relative paths start at the project's folder).
DATA_KEYS = ("data", "val_data")

# A data path is written relative to its project file when the data lies in the file's folder or at
# most this many folders above it (models/net.revs beside data/x.npz); further off it stays absolute.
MAX_UP = 2

_FOLDER_KINDS = ("mnist", "cifar10")


def split_spec(spec: Any) -> tuple[str, str] | None:
    """``(kind, path)`` of a data spec as ``training.sources.parse_spec`` reads it (``synthetic``,
    ``npz``, ``pt``, ``mnist``, ``cifar10``); None for what is no data spec (the config refuses it)."""
    if not isinstance(spec, str):
        return None
    text = spec.strip()
    if text == "synthetic":
        return "synthetic", ""
    for kind in _FOLDER_KINDS:
        if text.startswith(kind + ":"):
            return (kind, text[len(kind) + 1:]) if len(text) > len(kind) + 1 else None
    lower = text.lower()
    if lower.endswith(".npz"):
        return "npz", text
    if lower.endswith((".pt", ".pth")):
        return "pt", text
    return None


def _join(kind: str, path: str) -> str:
    return f"{kind}:{path}" if kind in _FOLDER_KINDS else path


def absolute_spec(spec: Any, base_dir: str) -> Any:
    """``spec`` with a relative (or ``~``) path made absolute against ``base_dir``, the folder it is
    relative to, so it names the same data from anywhere (a run folder's snapshot). ``synthetic``, an
    absolute path, and a value that is no data spec at all (left for the config to refuse) stay as
    they are."""
    parsed = split_spec(spec)
    if parsed is None or parsed[0] == "synthetic" or os.path.isabs(parsed[1]):
        return spec
    kind, path = parsed
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        path = os.path.join(base_dir, path)
    return _join(kind, os.path.normpath(os.path.abspath(path)))


def portable_spec(spec: Any, old_base: str, new_base: str) -> Any:
    """``spec`` (relative paths start at ``old_base``) as a project file in ``new_base`` should store
    it: relative to ``new_base`` where the data lies in that folder tree or at most ``MAX_UP``
    folders above it, else absolute, so the file names the same data from wherever it is opened
    and a copy moved with its data keeps working. ``synthetic`` and non-specs stay as they are."""
    full = absolute_spec(spec, old_base)
    parsed = split_spec(full)
    if parsed is None or parsed[0] == "synthetic" or not os.path.isabs(parsed[1]):
        return full
    kind, path = parsed
    try:
        rel = os.path.relpath(path, os.path.abspath(new_base))
    except ValueError:  # another drive (Windows): no relative path exists
        return full
    parts = rel.split(os.sep)
    if parts[: MAX_UP + 1].count(os.pardir) > MAX_UP or all(p == os.pardir for p in parts):
        return full
    return _join(kind, rel.replace(os.sep, "/"))


def portable_section(section: dict[str, Any], old_base: str, new_base: str,
                     relative_only: bool = False) -> dict[str, Any]:
    """A ``training`` section with its data paths re-expressed by :func:`portable_spec` (with
    ``relative_only``, the relative ones: ``rs.save`` keeps a path typed absolute as it is, but for
    one in a home folder that :func:`home_paths_relative` writes relative)."""
    def moved(spec: Any) -> Any:
        parsed = split_spec(spec)
        keep = relative_only and parsed is not None and os.path.isabs(os.path.expanduser(parsed[1]))
        return spec if keep else portable_spec(spec, old_base, new_base)

    out = {**section, **{k: moved(section[k]) for k in DATA_KEYS if k in section}}
    return home_paths_relative(out, new_base) if relative_only else out


def relative_home_spec(spec: Any, base: str) -> str | None:
    """The relative spec a project file in ``base`` writes for ``spec``, an absolute path in a home
    folder that lies in ``base``'s tree or at most ``MAX_UP`` folders above it (such a path names
    nothing on another machine, its relative form the same data from wherever the project and its
    data are); None for any other spec, which stays as it is written."""
    parsed = split_spec(spec)
    if parsed is None or parsed[0] == "synthetic" or not os.path.isabs(parsed[1]) or not _personal(parsed[1]):
        return None
    rel = split_spec(portable_spec(spec, base, base))
    return None if rel is None or os.path.isabs(rel[1]) else _join(*rel)


def home_paths_relative(section: dict[str, Any], base: str) -> dict[str, Any]:
    """``section`` with each :func:`relative_home_spec` path written relative to ``base`` (the folder
    of the file it is saved to): every save writes them so (the app's Save and Save As, ``rs.save``),
    and ``revstudio check`` says so of a file that still holds one absolute."""
    changed = {k: rel for k in DATA_KEYS if k in section
               and (rel := relative_home_spec(section[k], base)) is not None}
    return {**section, **changed} if changed else section


def source_folder(graph: Any) -> str | None:
    """The folder a graph's relative data paths start from: that of the file it was read from
    (``graph.source``), or None for a graph built in code (its paths start where it is saved)."""
    source = getattr(graph, "source", None)
    return os.path.dirname(os.path.abspath(source)) if source else None


_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")  # (a Windows path, absolute on any machine that reads the file)
_HOME_ROOTS = re.compile(r"^(/home/|/Users/|/root(/|$)|[A-Za-z]:[\\/]Users[\\/])")


def _personal(path: str) -> bool:
    """Whether an absolute ``path`` lies in a home folder (this user's or one named like it)."""
    home = os.path.expanduser("~")
    norm = os.path.normpath(path)
    if home not in ("~", os.sep) and (norm == home or norm.startswith(home.rstrip(os.sep) + os.sep)):
        return True
    return bool(_HOME_ROOTS.match(path))


def personal_paths(section: dict[str, Any]) -> list[tuple[str, str]]:
    """``[(key, path)]`` of the data paths of a ``training`` section that are absolute and lie in a
    home folder: a teammate's checkout (another user name) will not find them."""
    found = []
    for key in DATA_KEYS:
        parsed = split_spec(section.get(key))
        absolute = parsed is not None and (os.path.isabs(parsed[1]) or bool(_DRIVE.match(parsed[1])))
        if parsed is not None and parsed[0] != "synthetic" and absolute and _personal(parsed[1]):
            found.append((key, parsed[1]))
    return found


def personal_path_note(key: str, path: str, rel: str | None = None) -> str:
    """The words for one of :func:`personal_paths`: what is wrong and what to do (``rel``: the
    :func:`relative_home_spec` that saving the file holding it again writes, where there is one)."""
    head = (f"training.{key} is written as {path}, a path in a home folder: a teammate's checkout (or another "
            "machine) will not find it; ")
    if rel is not None:
        return head + (f"save the project again (the app's Save, or rs.save) and it is written relative, as {rel}, "
                       "which names the same data")
    return head + (f"put the data inside the project's folder (or at most {MAX_UP} folders above it) and save "
                   "again so the path is written relative, or give --data with the data's path there")


__all__ = ["DATA_KEYS", "MAX_UP", "absolute_spec", "home_paths_relative", "personal_path_note", "personal_paths",
           "portable_section", "portable_spec", "relative_home_spec", "source_folder", "split_spec"]
