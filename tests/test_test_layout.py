"""Any set of test folders collects in one pytest call, not only the whole suite.

pytest imports the test folders (no ``__init__.py``) by file name, so every module
name under tests/ must be unique, and no test may import ``conftest``: that name is
whichever folder's conftest pytest loaded last.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def _top_level_modules() -> dict[str, list[str]]:
    """Module name -> files, for the .py files pytest imports by their bare name."""
    names: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if path.name == "conftest.py" or any((d / "__init__.py").exists() for d in path.parents
                                             if TESTS in d.parents):
            continue
        names[path.stem].append(str(path.relative_to(ROOT)))
    return names


def test_no_two_test_modules_share_a_name() -> None:
    clashes = {name: files for name, files in _top_level_modules().items() if len(files) > 1}
    assert not clashes, f"rename one of each: {clashes}"


def test_no_test_imports_conftest_by_name() -> None:
    offenders = []
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if "conftest" in names:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, f"move what these import into a helper module beside the conftest: {offenders}"


def test_two_folders_with_conftests_collect_together() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    # the training conftest loads first, the plugins' last: a test importing ``conftest`` got the plugins'
    files = ["tests/training/test_terminal_text.py", "tests/plugins/test_plugin_contracts.py"]
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
