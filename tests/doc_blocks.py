"""The Python blocks of a page under docs/, run as a reader runs them (docs/python.md, docs/porting.md)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def run_doc_blocks(page: str, count: int) -> dict[str, Any]:
    """Run the ``count`` Python blocks of ``docs/<page>`` in order in one scope (a notebook's cells) and
    return the names they left; a traceback names the page and block. A page with another number of
    blocks fails first: a block added or dropped is one this runner would miss or look for."""
    blocks = PYTHON_BLOCK.findall((ROOT / "docs" / page).read_text(encoding="utf-8"))
    assert len(blocks) == count, f"docs/{page} has {len(blocks)} Python blocks, not {count}"
    scope: dict[str, Any] = {}
    for i, code in enumerate(blocks):
        exec(compile(code, f"docs/{page}, block {i + 1}", "exec"), scope)  # noqa: S102 - our docs
    return scope
