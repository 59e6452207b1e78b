"""No source file of the package or its tests is hidden by .gitignore.

A new module under an ignored name (``runs/`` once hid ``revstudio/qt/runs/snapshot.py``)
works in the checkout that wrote it and is missing from every clone, CI's included.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _made_by_a_run(path: Path) -> bool:
    """Files that training runs, benchmarks and Python leave in a checkout, rightly ignored."""
    parts = path.parts
    if "__pycache__" in parts or parts[:2] == ("benchmarks", "out"):
        return True
    return "runs" in parts and parts[:3] != ("revstudio", "qt", "runs")


def test_no_source_file_is_ignored_by_git() -> None:
    # the suite runs from a clone (README: make test); a copy without git has nothing to check
    assert shutil.which("git") is not None and (ROOT / ".git").exists(), \
        f"{ROOT} is not a git checkout: run the tests from a clone"
    sources = [str(p.relative_to(ROOT)) for top in ("revstudio", "tests", "benchmarks", "resources")
               for p in (ROOT / top).rglob("*") if p.is_file() and not _made_by_a_run(p.relative_to(ROOT))
               and p.suffix in (".py", ".revs", ".npz", ".json", ".svg", ".qss", ".toml", ".txt", ".md")]
    proc = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], input="\n".join(sources),
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    ignored = proc.stdout.split()
    assert not ignored, f"ignored by .gitignore, so missing from clones: {ignored}"
