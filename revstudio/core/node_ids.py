"""Ids for nodes an edit adds beside others: a free id by number (``fresh_id``) and the id of a
copy (``copy_id``: paste, duplicate, nodes from another window)."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .graph import valid_id


def fresh_id(base: str, taken: set[str] | Mapping[str, Any]) -> str:
    """``base`` if it is free, otherwise ``base1``, ``base2``, ... (trailing digits replaced)."""
    if base not in taken and valid_id(base):
        return base
    stem = base.rstrip("0123456789") or base
    stem = stem[:56] if valid_id(stem[:56]) else "node"
    i = 1
    while f"{stem}{i}" in taken:
        i += 1
    return f"{stem}{i}"


_COPY_SUFFIX = re.compile(r"_copy\d*$")


def copy_id(base: str, taken: set[str] | Mapping[str, Any]) -> str:
    """The id of a copy of the node ``base`` (paste, duplicate, nodes from another window): ``base``
    where it is free, else ``base_copy``, then ``base_copy2``, ``base_copy3``... A copy's id says
    which node it copies (in the canvas and as the exported code's attribute), where ``conv3`` for a
    copy of ``conv1`` read as another layer of a numbered row; a copy of a copy counts on from the
    same source (``conv1_copy`` -> ``conv1_copy2``)."""
    if base not in taken and valid_id(base):
        return base
    stem = _COPY_SUFFIX.sub("", base) or base
    stem = stem[:56] if valid_id(stem[:56]) else "node"
    first = f"{stem}_copy"
    if first not in taken:
        return first
    i = 2
    while f"{first}{i}" in taken:
        i += 1
    return f"{first}{i}"
