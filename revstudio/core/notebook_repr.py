"""What a notebook shows for a report object (``rs.check``'s, ``rs.gradcheck``'s, an estimate): its
``repr``, a one-line summary and the first few entries, never every field of the dataclass.

Torch-free and Qt-free; ``revstudio.core`` and ``revstudio.diagnostics`` reports share it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def short_repr(head: str, entries: Sequence[object], most: int, where: str) -> str:
    """``head``, then the first ``most`` of ``entries`` indented, and ``... N more in WHERE`` for the rest."""
    lines = [head, *(f"  {entry}" for entry in entries[:most])]
    if len(entries) > most:
        lines.append(f"  ... {len(entries) - most} more in {where}")
    return "\n".join(lines)


class NotebookRepr:
    """IPython's display of the object (``_repr_pretty_``) is its ``repr``: the same summary as a
    plain ``print(repr(...))``, not the pretty printer's walk over every dataclass field."""

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))
