"""A run folder's project snapshot has one name in the code (``core.project_format.SNAPSHOT``): sixteen modules
spelled it by hand, and one that drifted would write or look for a file no other reads."""
from __future__ import annotations

import re
from pathlib import Path

from revstudio.core.project_format import SNAPSHOT
from revstudio.training import runs

PACKAGE = Path(__file__).resolve().parents[2] / "revstudio"


def test_the_snapshot_is_spelled_only_where_it_is_named() -> None:
    spelled = re.compile(r"""(["'])project\.revs\1""")
    found = sorted(str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py")
                   if spelled.search(p.read_text(encoding="utf-8")))
    assert found == ["revstudio/core/project_format.py"], found
    assert runs.SNAPSHOT is SNAPSHOT and SNAPSHOT in runs.START_FILES
