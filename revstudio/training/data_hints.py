"""What to say of a relative data path that names nothing: the one source of these words for
``revstudio train`` (the project's folder) and the exported training script, which copies this
module verbatim (``codegen.training.data_modules``) and names its folder ``--base-dir``.

Only ``os`` and ``sources`` (copied into the script before it) are used, so the copy runs alone.
"""
from __future__ import annotations

import os
from typing import Any

from .sources import DataError, parse_spec, resolve

# (how revstudio names the folder relative paths start from, and where else the path is corrected)
PROJECT_START = "the project's folder"
PROJECT_FIX = "(in the app: Run > Run Settings)"


def found_here(specs: dict[str, Any], base_dir: str) -> tuple[str, str, str, str] | None:
    """(option, the path as typed, its absolute path, what to give that option) for the first missing relative data
    path that names a file (a folder for ``mnist:``/``cifar10:``) from the current folder instead,
    typed or tab-completed there; None if there is none. ``specs``: {the option that sets it: the
    spec}, e.g. ``{"--data": cfg.data, "--val-data": cfg.val_data}``."""
    for option, spec in specs.items():
        if not isinstance(spec, str) or not spec:
            continue
        try:
            kind, path = parse_spec(spec)
        except DataError:
            continue  # (the config's own message says what is wrong with it)
        path = os.path.expanduser(path)
        if kind == "synthetic" or os.path.isabs(path):
            continue
        exists = os.path.isdir if kind in ("mnist", "cifar10") else os.path.isfile
        if not exists(resolve(path, base_dir)) and exists(path):
            here = os.path.abspath(path)
            return option, path, here, f"{kind}:{here}" if kind in ("mnist", "cifar10") else here
    return None


def from_here_hint(specs: dict[str, Any], base_dir: str, nowhere: bool = True, start: str = PROJECT_START,
                   fix: str = PROJECT_FIX) -> str:
    """``; relative data paths start from the project's folder ...`` where :func:`found_here` finds
    one, else :func:`nowhere_hint` (``nowhere``) or ''. ``start``: what the folder is called (the
    script's ``--base-dir``); ``fix``: where else the path is corrected."""
    found = found_here(specs, base_dir)
    if found is None:
        return nowhere_hint(specs, base_dir, start, fix) if nowhere else ""
    option, _, _, given = found
    return (f"; relative data paths start from {start} ({base_dir}), not the current one: "
            f"for the one here, give {option} {given}" + ("" if fix == PROJECT_FIX else f" {fix}"))


def nowhere_hint(specs: dict[str, Any], base_dir: str, start: str = PROJECT_START, fix: str = PROJECT_FIX) -> str:
    """``; a relative data path starts from the project's folder ...`` for the first relative path
    that names nothing there (a project copied or saved elsewhere without its data), else ''."""
    for option, spec in specs.items():
        try:
            kind, path = parse_spec(spec) if isinstance(spec, str) and spec else ("synthetic", "")
        except DataError:
            continue
        path = os.path.expanduser(path)
        if kind == "synthetic" or os.path.isabs(path):
            continue
        exists = os.path.isdir if kind in ("mnist", "cifar10") else os.path.isfile
        if not exists(resolve(path, base_dir)):
            return (f"; a relative data path starts from {start} ({base_dir}), and {path} names "
                    f"nothing there: put the data where it points, or give {option} with the data's own path "
                    f"{fix}")
    return ""
